"""Recoverable time = the replay's predicted gain: each fix alone, on top of the others, and all together."""

from __future__ import annotations

from functools import reduce
from typing import Any, Optional

from ..analysis import ALL_FIXES, FIXES, Analysis, Fix
from ._finding import Finding
from ._registry import Cause, Kind


def replay_keys(a: Analysis) -> dict[str, str]:
    """cause -> the replay fix (ALL_FIXES) its finding's fix makes where a framework setting phrases it and makes
    another change than the cause's generic fix (Lightning's launch-bound fix compiles the module in
    torch.compile's default mode, not CUDA graphs)."""
    from .frameworks import runner
    from .frameworks_table import SETTINGS

    who = runner(a) if any(s.replay for s in SETTINGS) else None
    return {s.cause: s.replay for s in SETTINGS if s.replay and who and s.framework == who[0]}


def replay_fix(a: Analysis, causes: list[str], keys: Optional[dict[str, str]] = None) -> Fix:
    """The replay's change for fixing these causes as the findings say to (replay_keys)."""
    keys = replay_keys(a) if keys is None else keys
    return reduce(Fix.merged, (ALL_FIXES[keys.get(c, c)] for c in causes), Fix())


def predict(a: Analysis, found: list[Finding]) -> dict[str, Any]:
    """Set each finding's recoverable time to its replayed gain on the (unprofiled) step; return the stack."""
    rp = a.replay
    if rp is None:
        return {}
    rate = float(a.observer.get("host_rate", 1.0))
    base = rp.play(rate=rate).step_ns

    keys = replay_keys(a)

    def step(causes: list[str]) -> float:
        return rp.play(replay_fix(a, causes, keys), rate).step_ns

    fixable = [f for f in found if f.kind != Kind.RISK and f.cause in FIXES]
    alone = {f.cause: base - step([f.cause]) for f in fixable}
    stack = sorted(
        (str(c) for c, g in alone.items() if g > 0), key=lambda c: -alone[c]
    )  # plain strings for JSON
    all_ns = step(stack)
    for f in fixable:
        others = [c for c in stack if c != f.cause]
        on_top = step(others) - step(others + [f.cause])
        _apply(f, base, alone[f.cause], on_top, bool(others))
    return {
        "step_ms": base / 1e6,
        "host_rate": rate,
        "stack": stack,
        "stack_step_ms": all_ns / 1e6,
        "stack_gain_ms": (base - all_ns) / 1e6,
    }


def _apply(f: Finding, base: float, gain: float, on_top: float, has_others: bool) -> None:
    gain = max(gain, 0.0)
    f.recoverable_ms, f.step_ms = gain / 1e6, base / 1e6
    if f.cause != Cause.CUDNN_BENCHMARK:  # its 10% of convolution time is a guess the replay cannot check
        f.basis_ms = None
    f.details["replay"] = {
        "predicted_step_ms": (base - gain) / 1e6,
        "gain_ms": gain / 1e6,
        "gain_with_other_fixes_ms": max(on_top, 0.0) / 1e6,
    }
    line = (
        f"replay: removing this cause alone takes the step from {base / 1e6:.2f} to "
        f"{(base - gain) / 1e6:.2f} ms"
    )
    if has_others:
        more = max(on_top, 0.0) / 1e6
        line += (
            f"; with the other named fixes in place it gives back {more:.2f} ms more"
            if more >= 0.005
            else "; with the other named fixes in place it gives back nothing more (they recover this time)"
        )
    f.evidence.append(line)
