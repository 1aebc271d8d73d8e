"""The observer correction: how much of the recorded host time the profiler itself added (docs/metrics.md, Replay).

Three ways, in this order: fitted on this run (the replay's cost per host event, or one host rate, searched so
the replayed step matches the run's mean steady unprofiled step), the prior (a cost per host event measured on
calibration loops, src/idlehound/data/profiler_cost.json, with its spread), or none (no replay). A fit that cannot
explain the run (it lands on a bound, or the unprofiled steps are bursty or bimodal, or only their median was
kept) is not used: the prior is, with a note saying why.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from ._replay import Replay

PRIOR_FILE = Path(__file__).resolve().parent.parent / "data" / "profiler_cost.json"
STEADY_SKIP = 3  # unprofiled steps at the run's start that warm up caches, the allocator and compilation
MIN_STEADY_STEPS = 3  # fewer steady unprofiled steps than this: no usable timing
FIT_TOLERANCE = 0.05  # a replay within 5% of a measured step matches it
OBSERVER_RATE = 0.8  # a fitted host rate below this means the profiler inflated host time (worth a note)
BURSTY_CV = 0.5  # steady steps whose spread is half their mean or more come in bursts (loader stalls)
BIMODAL_GAP = 0.25  # a gap this share of the median between two groups of steps: two modes, not one
BIMODAL_SIDE = 0.2  # ...each group holding at least this share of the steps
T975 = {3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 7: 2.45, 8: 2.36, 9: 2.31, 10: 2.26, 12: 2.20, 15: 2.14, 20: 2.09}

FITTED = "fitted on this run"  # the correction names (docs/metrics.md, "Which correction")
NONE = "none"


@dataclass(frozen=True)
class Prior:
    """The profiler's cost per recorded host event, from calibration loops: middle and spread (µs)."""

    overhead_us: float
    low_us: float
    high_us: float
    loops: int
    kind_weights: dict[str, float]

    @property
    def label(self) -> str:
        return f"prior from {self.loops} calibration loops"


@lru_cache(maxsize=1)
def prior_data() -> dict[str, Any]:
    """The prior file; without it (a broken install) no prior and no fix-constant ranges: correction "none"."""
    try:
        return dict(json.loads(PRIOR_FILE.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return {"loops": [], "fix_constants": {}}


def load_prior() -> Optional[Prior]:
    """The prior of data/profiler_cost.json (None when the file holds no calibration loop)."""
    d = prior_data()
    o = d.get("overhead_us") or {}
    if not d.get("loops") or "median" not in o:
        return None
    return Prior(
        float(o["median"]),
        float(o["low"]),
        float(o["high"]),
        len(d["loops"]),
        dict(d.get("kind_weights") or {}),
    )


def fix_constant_ranges() -> dict[str, tuple[float, float]]:
    """Each fix constant's (least gain, most gain) value, from the prior file (docs/metrics.md, Intervals)."""
    return {
        k: (float(v["least_gain"]), float(v["most_gain"])) for k, v in prior_data()["fix_constants"].items()
    }


def steady_steps(run: dict[str, Any]) -> list[float]:
    """The run's unprofiled steps past warm-up (the first after the window pays for the profiler's teardown)."""
    before = [float(x) for x in run.get("step_ms_before_window") or []][STEADY_SKIP:]
    after = [float(x) for x in run.get("step_ms_after_window") or []][1:]
    return before + after


def unprofiled_step(run: dict[str, Any]) -> dict[str, Any]:
    """The step time without the profiler, from run.json (docs/metrics.md): the mean of the steady unprofiled
    steps, else run.json's median; {} when the run folder has neither."""
    steady = steady_steps(run)
    if len(steady) >= MIN_STEADY_STEPS:
        return dict(
            unprofiled_ms=float(np.mean(steady)), unprofiled_steps=len(steady), source="mean of steady steps"
        )
    if isinstance(run.get("unprofiled_step_ms"), (int, float)):  # older run.json: only the median was kept
        return dict(unprofiled_ms=float(run["unprofiled_step_ms"]), unprofiled_steps=None, source="median")
    return {}


def unusable(steps: list[float], run: dict[str, Any]) -> Optional[str]:
    """Why these unprofiled steps cannot be fitted to (None: they can)."""
    if len(steps) < MIN_STEADY_STEPS:
        if isinstance(run.get("unprofiled_step_ms"), (int, float)):
            return "run.json keeps only the median unprofiled step (written by an earlier version)"
        return "" if not run else "run.json holds no unprofiled steps"
    x = np.sort(np.array(steps, np.float64))
    med = float(np.median(x))
    if x.std() >= BURSTY_CV * x.mean():
        return (
            f"the unprofiled steps come in bursts (median {med:.2f} ms, mean {x.mean():.2f} ms, "
            f"longest {x[-1]:.2f} ms)"
        )
    gaps = np.diff(x)
    k = int(np.argmax(gaps)) if gaps.size else 0
    side = min(k + 1, x.size - k - 1) / x.size
    if gaps.size and gaps[k] >= BIMODAL_GAP * med and side >= BIMODAL_SIDE:
        return f"the unprofiled steps have two modes ({x[k]:.2f} ms and below, {x[k + 1]:.2f} ms and above)"
    return None


def mean_interval(steps: list[float]) -> tuple[float, float]:
    """The 95% interval of the mean unprofiled step (Student's t)."""
    x = np.array(steps, np.float64)
    t = T975[max(k for k in T975 if k <= x.size)] if x.size < 30 else 2.0
    half = t * x.std(ddof=1) / np.sqrt(x.size)
    return float(x.mean() - half), float(x.mean() + half)


@contextmanager
def overhead_at(rp: Replay, ns: float) -> Iterator[Replay]:
    """The replay with another cost per event for a while (the interval's ends); the fitted one put back."""
    keep = rp.overhead_ns
    rp.overhead_ns = ns
    try:
        yield rp
    finally:
        rp.overhead_ns = keep


def correct(rp: Replay, run: dict[str, Any]) -> dict[str, Any]:
    """Set the replay's observer correction and return what was done (the `observer` of the analysis)."""
    out: dict[str, Any] = {
        "replayed_ms": rp.play().step_ns / 1e6,
        "recorded_ms": rp.recorded_ns / 1e6,
        "host_rate": 1.0,
        "correction": NONE,
    }
    steps = steady_steps(run)
    out.update(unprofiled_step(run))  # shown as measured, fitted to or not
    why = unusable(steps, run)
    if why is None:
        why = _fit(rp, out, mean_interval(steps))
    if why is not None:
        _use_prior(rp, out, why)
    out["predicted_ms"] = rp.play(rate=out["host_rate"]).step_ns / 1e6
    lo, hi = out.get("overhead_range_ns", (rp.overhead_ns, rp.overhead_ns))
    with overhead_at(rp, hi):
        fast = rp.play(rate=out["host_rate"]).step_ns / 1e6
    with overhead_at(rp, lo):
        slow = rp.play(rate=out["host_rate"]).step_ns / 1e6
    out["predicted_range_ms"] = [min(fast, slow), max(fast, slow)]
    return out


def _fit(rp: Replay, out: dict[str, Any], target: tuple[float, float]) -> Optional[str]:
    """Fit the cost per event (else one host rate) to the unprofiled step; why not, where the fit cannot explain
    the run (on a bound, faster than the recorded GPU work allows, or slower than the replay with no profiler
    cost at all)."""
    un = out["unprofiled_ms"] * 1e6
    slowest = out["replayed_ms"]  # played before any cost was taken out: the slowest the replay can be
    if target[0] > (1 + FIT_TOLERANCE) * slowest:
        return (
            f"the unprofiled steps are slower than the profiled ones ({out['unprofiled_ms']:.2f} against "
            f"{slowest:.2f} ms): no profiler cost explains that, so time the window does not show (a loader "
            "that cannot keep up, other work on the machine) slowed them"
        )
    if fit_overhead(rp, un):
        if rp.overhead_ns >= OVERHEAD_MAX_NS * 0.999:
            return f"the fitted profiler cost sits at its bound ({OVERHEAD_MAX_NS / 1e3:.0f} µs an event)"
        if rp.overhead_ns > 0:
            out["overhead_us"] = rp.overhead_ns / 1e3
            out["overhead_range_ns"] = _fit_range(rp, target)
        out["correction"] = FITTED
        return None
    rate = fit_rate(rp, un)
    if rate <= FIT_RATE_MIN:
        return f"the fitted host rate sits at its floor ({FIT_RATE_MIN})"
    if rp.play(rate=rate).step_ns > (1 + FIT_TOLERANCE) * un:
        out["inconsistent"] = True
        return "the unprofiled step is faster than the recorded GPU work allows"
    out["host_rate"], out["correction"] = rate, FITTED
    return None


def _fit_range(rp: Replay, target: tuple[float, float]) -> tuple[float, float]:
    """The costs that match the two ends of the unprofiled mean's 95% interval (the fitted cost in between)."""
    keep = rp.overhead_ns
    ends = []
    for t in target:
        ends.append(rp.overhead_ns if fit_overhead(rp, t * 1e6) else keep)
    rp.overhead_ns = keep
    return min(ends + [keep]), max(ends + [keep])


def _use_prior(rp: Replay, out: dict[str, Any], why: str) -> None:
    p = load_prior()
    out["host_rate"] = 1.0
    rp.overhead_ns = 0.0
    if p is None:
        out["correction"] = NONE
        return
    rp.event_weights = p.kind_weights
    rp.overhead_ns = p.overhead_us * 1e3
    out.update(
        correction=p.label,
        overhead_us=p.overhead_us,
        overhead_range_ns=(p.low_us * 1e3, p.high_us * 1e3),
        prior_loops=p.loops,
    )
    if why:
        out["fit_not_used"] = why
    stacks = [bool((x.get("settings") or {}).get("with_stack")) for x in prior_data()["loops"]]
    if rp.kind_events.get("python_function", 0) == 0 and stacks and all(stacks):
        out["prior_caveat"] = "calibrated on traces with Python stacks; this one has none"


def notes(obs: dict[str, Any]) -> list[str]:
    """The note naming the observer correction: the profiler's inflation the fit took out, the prior that took the
    place of a fit, or that there was nothing to take out."""
    if obs.get("correction", NONE) == NONE:
        return [
            "observer correction: none (no unprofiled timing and no prior): gains are for the profiled step"
        ]
    if obs.get("correction", NONE) != FITTED:
        lo, hi = (x / 1e3 for x in obs["overhead_range_ns"])
        why = f" ({obs['fit_not_used']})" if obs.get("fit_not_used") else " (no unprofiled timing)"
        if obs.get("prior_caveat"):
            why += f"; {obs['prior_caveat']}"
        return [
            f"observer correction: {obs['correction']}{why}: the replay takes {obs['overhead_us']:.2f} µs "
            f"({lo:.2f}-{hi:.2f}) out of each host event the profiler recorded, and every gain is predicted "
            "for the unprofiled step as a range"
        ]
    rate, un = obs.get("host_rate", 1.0), obs.get("unprofiled_ms")
    if un is None or abs(obs["replayed_ms"] / obs["recorded_ms"] - 1) > FIT_TOLERANCE:
        return []
    little = (
        f"observer correction: {FITTED}: unprofiled steps take {un:.2f} ms ({obs['source']}) against "
        f"{obs['recorded_ms']:.2f} ms profiled: little or no profiler cost to take out"
    )
    if "overhead_us" in obs:
        if un > (1 - FIT_TOLERANCE) * obs["recorded_ms"]:
            return [little]
        how = f"takes the profiler's cost of {obs['overhead_us']:.2f} µs out of each host event it recorded"
    elif rate > OBSERVER_RATE:
        return [little]
    else:
        how = f"runs host work at {rate:.2f}x its recorded time"
    return [
        f"observer correction: {FITTED}: the profiler inflated host time: unprofiled steps take {un:.2f} ms ({obs['source']}) against "
        f"{obs['recorded_ms']:.2f} ms profiled; the replay {how} to match, and every gain is predicted for the "
        "unprofiled step"
    ]


# ---- the fit of the profiler's cost (or one host rate) to the unprofiled step
FIT_RATE_MIN = 0.02  # the lowest host rate the observer fit tries (the profiler inflating host work 50x)
FIT_STEPS = 12  # bisection steps of the fit: the rate to within 1/4096
OVERHEAD_MAX_NS = 50_000.0  # the largest profiler cost per host event the observer fit tries
OVERHEAD_STEPS = 20  # bisection steps of that fit: to within 0.05 ns


def fit_overhead(rp: Replay, target_ns: float) -> bool:
    """Set the profiler's cost per host event so the replayed step matches the measured unprofiled one;
    False (and no cost) when no cost up to OVERHEAD_MAX_NS reaches it (then fit_rate scales host time)."""
    rp.overhead_ns = 0.0
    if rp.play().step_ns <= target_ns:
        return True
    rp.overhead_ns = OVERHEAD_MAX_NS
    if rp.play().step_ns > target_ns:
        rp.overhead_ns = 0.0
        return False

    def slow_at(cost: float) -> bool:
        rp.overhead_ns = cost
        return rp.play().step_ns > target_ns

    rp.overhead_ns = round(_bisect(slow_at, 0.0, OVERHEAD_MAX_NS, OVERHEAD_STEPS), 1)
    return True


def fit_rate(rp: Replay, target_ns: float) -> float:
    """Host rate at which the replayed step matches the measured unprofiled step (1 = no correction)."""
    if rp.play(rate=1.0).step_ns <= target_ns:
        return 1.0
    if rp.play(rate=FIT_RATE_MIN).step_ns >= target_ns:
        return FIT_RATE_MIN
    return _bisect(lambda r: rp.play(rate=r).step_ns > target_ns, 1.0, FIT_RATE_MIN, FIT_STEPS)


def _bisect(slow_at: Callable[[float], bool], slow: float, fast: float, steps: int) -> float:
    """The setting between slow (the replayed step above its target there) and fast (at or below it) where the
    step meets the target, by bisection; slow_at(x): whether it is still above at x."""
    for _ in range(steps):
        mid = (slow + fast) / 2
        if slow_at(mid):
            slow = mid
        else:
            fast = mid
    return (slow + fast) / 2
