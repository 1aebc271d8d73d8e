"""Recoverable time = the replay's predicted gain: each fix alone, on top of the others, and all together."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import reduce
from typing import Any, Optional

from ..analysis import ALL_FIXES, FIXES, Analysis, Fix, fix_constant_ranges, make_fixes, overhead_at
from ..vocabulary import Cause, FixName, Kind
from ._finding import Finding
from .frameworks import replay_keys


def replay_fix(
    a: Analysis,
    causes: list[Cause],
    keys: Optional[Mapping[Cause, FixName]] = None,
    fixes: Optional[Mapping[FixName, Fix]] = None,
) -> Fix:
    """The replay's change for fixing these causes as the findings say to (replay_keys); `fixes`: ALL_FIXES at
    other constants (an interval's end)."""
    keys = replay_keys(a) if keys is None else keys
    table = ALL_FIXES if fixes is None else fixes
    return reduce(Fix.merged, (table[keys.get(c, c)] for c in causes), Fix())


def _ends() -> tuple[dict[FixName, Fix], dict[FixName, Fix]]:
    """The fixes at the constants that give the least and the most gain (data/profiler_cost.json)."""
    r = fix_constant_ranges()
    return make_fixes({k: v[0] for k, v in r.items()}), make_fixes({k: v[1] for k, v in r.items()})


def predict(a: Analysis, found: list[Finding]) -> tuple[dict[str, Any], list[Finding]]:
    """The best stack of fixes, and the findings with their recoverable time set to their replayed gain on the
    (unprofiled) step, with its range (unchanged without a replay or a replay fix)."""
    rp = a.replay
    if rp is None:
        return {}, found
    rate = float(a.observer.get("host_rate", 1.0))
    base = rp.play(rate=rate).step_ns

    keys = replay_keys(a)

    def step(causes: list[Cause]) -> float:
        return rp.play(replay_fix(a, causes, keys), rate).step_ns

    fixable = [f for f in found if f.kind != Kind.RISK and f.cause in FIXES]
    alone = {f.cause: base - step([f.cause]) for f in fixable}
    stack = sorted((c for c, g in alone.items() if g > 0), key=lambda c: -alone[c])
    all_ns = step(stack)
    ranges = _ranges(a, [[f.cause] for f in fixable] + [stack], keys, rate)
    replayed: dict[int, Finding] = {}
    for f, r in zip(fixable, ranges):
        others = [c for c in stack if c != f.cause]
        on_top = step(others) - step(others + [f.cause])
        replayed[id(f)] = _apply(f, base, alone[f.cause], on_top, bool(others), r)
    stack_r = ranges[-1]
    prediction = {
        "step_ms": base / 1e6,
        "host_rate": rate,
        "stack": [str(c) for c in stack],  # plain strings for JSON
        "stack_step_ms": all_ns / 1e6,
        "stack_gain_ms": (base - all_ns) / 1e6,
        "stack_step_range_ms": [stack_r.step_lo / 1e6, stack_r.step_hi / 1e6],
        "stack_gain_range_ms": [stack_r.gain_lo / 1e6, stack_r.gain_hi / 1e6],
    }
    return prediction, [replayed.get(id(f), f) for f in found]


@dataclass
class Range:
    """A prediction's ends over the correction's range and the fix constants' ranges (docs/metrics.md)."""

    gain_lo: float = float("inf")  # ns per step
    gain_hi: float = float("-inf")
    share_lo: float = float("inf")  # of the replayed step at the same correction
    share_hi: float = float("-inf")
    step_lo: float = float("inf")  # the replayed step with the fix
    step_hi: float = float("-inf")

    def add(self, base: float, fixed: float) -> None:
        g = max(base - fixed, 0.0)
        self.gain_lo, self.gain_hi = min(self.gain_lo, g), max(self.gain_hi, g)
        s = g / base if base > 0 else 0.0
        self.share_lo, self.share_hi = min(self.share_lo, s), max(self.share_hi, s)
        self.step_lo, self.step_hi = min(self.step_lo, fixed), max(self.step_hi, fixed)


def gain_range(a: Analysis, causes: list[Cause]) -> tuple[float, float, float]:
    """The predicted gain of fixing these causes together as a share of the step: point, low, high."""
    rp = a.replay
    assert rp is not None
    rate = float(a.observer.get("host_rate", 1.0))
    keys = replay_keys(a)
    base = rp.play(rate=rate).step_ns
    point = (base - rp.play(replay_fix(a, causes, keys), rate).step_ns) / base if base > 0 else 0.0
    (r,) = _ranges(a, [causes], keys, rate)
    return point, min(r.share_lo, point), max(r.share_hi, point)


def _ranges(a: Analysis, sets: list[list[Cause]], keys: Mapping[Cause, FixName], rate: float) -> list[Range]:
    """Each set of causes' gain at every corner: the correction's low, fitted and high cost per event, times the
    fix constants at their point, least-gain and most-gain values."""
    rp = a.replay
    assert rp is not None
    lo, hi = a.observer.get("overhead_range_ns", (rp.overhead_ns, rp.overhead_ns))
    least, most = _ends()
    out = [Range() for _ in sets]
    for ns in dict.fromkeys((float(lo), rp.overhead_ns, float(hi))):
        with overhead_at(rp, ns):
            base = rp.play(rate=rate).step_ns
            for table in (None, least, most):
                for r, causes in zip(out, sets):
                    r.add(base, rp.play(replay_fix(a, causes, keys, table), rate).step_ns)
    return out


def _apply(f: Finding, base: float, gain: float, on_top: float, has_others: bool, r: Range) -> Finding:
    """f with the replay's gain as its recoverable time, its range, and the replay's line of evidence."""
    gain = max(gain, 0.0)
    share = gain / base if base > 0 else 0.0
    share_range = (min(r.share_lo, share), max(r.share_hi, share))
    replay = {
        "predicted_step_ms": (base - gain) / 1e6,
        "predicted_step_range_ms": [r.step_lo / 1e6, r.step_hi / 1e6],
        "gain_ms": gain / 1e6,
        "gain_with_other_fixes_ms": max(on_top, 0.0) / 1e6,
    }
    lo, hi = share_range
    line = (
        f"replay: removing this cause alone takes the step from {base / 1e6:.2f} to "
        f"{(base - gain) / 1e6:.2f} ms ({100 * lo:.1f}-{100 * hi:.1f}% of the step over the correction's and the "
        "fix's uncertainty)"
    )
    if has_others:
        more = max(on_top, 0.0) / 1e6
        line += (
            f"; with the other named fixes in place it gives back {more:.2f} ms more"
            if more >= 0.005
            else "; with the other named fixes in place it gives back nothing more (they recover this time)"
        )
    return replace(
        f,
        recoverable_ms=gain / 1e6,
        step_ms=base / 1e6,
        recoverable_range_ms=(min(r.gain_lo, gain) / 1e6, max(r.gain_hi, gain) / 1e6),
        share_range=share_range,
        # its 10% of convolution time is a guess the replay cannot check: the bar stays on the measured basis
        basis_ms=f.basis_ms if f.cause == Cause.CUDNN_BENCHMARK else None,
        details={**f.details, "replay": replay},
        evidence=(*f.evidence, line),
    )
