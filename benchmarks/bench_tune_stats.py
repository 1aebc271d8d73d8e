"""How often tune's measurement calls a no-op "faster", and how often it finds a real 1.3x, on a simulated machine
whose speed drifts across the tune (later processes 15-25% faster, as seen on an H200) with per-run noise.

Compares the old design (the baseline twice first, each variant once, against the baseline's mean; >= 3% = a win)
with the interleaved rounds and 95% intervals of idlehound.tune._stats. Pure Python; a few seconds.

    python benchmarks/bench_tune_stats.py [--trials 2000]
"""

from __future__ import annotations

import argparse
import math
import random

from idlehound.tune._stats import Schedule, effect, interval, log_ratios, measure_interleaved


def machine(true_ms: dict[str, float], drift: float, noise: float, rng: random.Random, total: int):
    def measure(arm: str, i: int, pos: int) -> float:
        return true_ms[arm] * (1 + drift * pos / total) * math.exp(rng.gauss(0, noise))

    return measure


def old_design(true_ms, drift, noise, rng, arms) -> dict[str, bool]:
    total = 2 + len(arms)
    m = machine(true_ms, drift, noise, rng, total)
    base = (m("base", 0, 0) + m("base", 1, 1)) / 2
    return {a: base / m(a, 0, 2 + i) >= 1.03 for i, a in enumerate(arms)}


def new_design(true_ms, drift, noise, rng, arms, seed) -> dict[str, bool]:
    total = (len(arms) + 1) * 5 + 1
    m = machine(true_ms, drift, noise, rng, total)
    runs = measure_interleaved("base", arms, m, Schedule(seed=seed))
    return {a: effect(interval(log_ratios(runs, "base", a))) == "faster" for a in arms}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=2000)
    trials = ap.parse_args().trials
    true_ms = {"base": 50.0, "noop": 50.0, "fast": 50.0 / 1.3}
    print(f"{'drift':>6} {'noise':>6} | {'no-op called faster':>21} | {'1.3x found':>19}")
    print(f"{'':>6} {'':>6} | {'old':>10} {'new':>10} | {'old':>9} {'new':>9}")
    for drift in (0.0, -0.15, -0.25):
        for noise in (0.01, 0.03, 0.10):
            rng = random.Random(1)
            old = [old_design(true_ms, drift, noise, rng, ["noop", "fast"]) for _ in range(trials)]
            new = [new_design(true_ms, drift, noise, rng, ["noop", "fast"], s) for s in range(trials)]

            def rate(xs, arm):
                return 100 * sum(x[arm] for x in xs) / len(xs)

            print(
                f"{drift:>6.2f} {noise:>6.2f} | {rate(old, 'noop'):>9.1f}% {rate(new, 'noop'):>9.1f}% | "
                f"{rate(old, 'fast'):>8.1f}% {rate(new, 'fast'):>8.1f}%"
            )


if __name__ == "__main__":
    main()
