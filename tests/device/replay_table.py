"""Print the markdown table of replay predictions against the H200 A/B truths (docs/measurements/replay-h200.md).

Usage: PYTHONPATH=src python tests/device/replay_table.py [tests/traces/replay]
"""

import json
import statistics
import sys
from pathlib import Path

from idlehound.diagnose._predict import replay_fix
from idlehound.pipeline import analyze_path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import tests.test_replay_h200 as h200  # noqa: E402  (one definition of the interval)


def main() -> None:
    here = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/traces/replay")
    truths = json.loads((here / "truths.json").read_text())
    h200.TRUTHS = truths
    print(
        "| loop | recorded step | replayed | unprofiled (mean) | profiler cost an event | fix | predicted gain | "
        "A/B gain [95% interval] (rounds) | named |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for loop, t in sorted(truths.items()):
        if not (here / loop).is_dir():
            continue
        res = analyze_path(here / loop)
        a, obs = res.analysis, res.analysis.observer
        rate = obs["host_rate"]
        base = a.replay.play(rate=rate).step_ns
        for cause in [c for c in t if not c.startswith("base")]:
            b = statistics.mean(t.get(f"base_{cause}", t["base"]))
            fixed = a.replay.play(replay_fix(a, cause.split("+")), rate).step_ns
            pred = (base - fixed) / base
            rounds = ", ".join(
                f"{100 * (1 - f / s):.0f}%" for s, f in zip(t.get(f"base_{cause}", t["base"]), t[cause])
            )
            truth, lo, hi = h200.measured_gain(loop, cause)
            f = next((f for f in res.findings if f.cause == cause), None)
            named = f"{100 * f.share:.0f}% (#{res.findings.index(f) + 1})" if f else "no"
            print(
                f"| {loop} | {obs['recorded_ms']:.2f} ms | {obs['replayed_ms']:.2f} ms | "
                f"{obs.get('unprofiled_ms') or float('nan'):.2f} ms (A/B base {b:.2f}) | {observer_cost(obs)} | {cause} | "
                f"{100 * pred:.1f}% ({(base - fixed) / 1e6:.2f} ms) | "
                f"{100 * truth:.1f}% [{100 * lo:.0f}, {100 * hi:.0f}] ({rounds}) | {named} |"
            )


def observer_cost(obs: dict) -> str:
    """The fitted profiler cost per host event, or the host rate where the fit fell back to one."""
    if "overhead_us" in obs:
        return f"{obs['overhead_us']:.2f} µs"
    return f"rate {obs['host_rate']:.2f}"


if __name__ == "__main__":
    main()
