"""The loss checks: a variant keeps the script's math when its per-step losses match the baseline's, exactly
(changes that must not alter the math, such as loader workers) or within a tolerance (precision changes)."""

from __future__ import annotations

import math as _math
from typing import Any, Optional

# Precision changes: a different rounding makes two training runs drift apart step by step, so the check is on
# the smoothed curve: the mean of the last SMOOTH losses within 10% (+ 0.02) of the baseline's, at every step.
RTOL, ATOL, SMOOTH = 0.10, 0.02, 10
SAME_RTOL_CUDA = 1e-5  # GPU reductions may reorder between runs; on the CPU "same" means bitwise equal


def check_losses(
    ref: list[float], got: list[float], math: str, cuda: bool, noise: Optional[float] = None
) -> tuple[bool, Optional[float], str]:
    """Compare per-step losses; returns (ok, largest relative difference, what was checked).

    "same": bitwise equal on the CPU; on CUDA, where reductions may reorder between runs, equal within 1e-5 or
    twice the difference between two runs of the unmodified script, whichever is larger.
    "precision": every loss finite, and the running mean of the last SMOOTH losses within RTOL (+ ATOL) of
    the baseline's at every step.
    """
    n = min(len(ref), len(got))
    if n == 0:
        return False, None, "no losses recorded"
    if math == "same":
        return _check_same(ref[:n], got[:n], cuda, noise)
    bad = next((i for i in range(n) if not _math.isfinite(got[i])), None)
    if bad is not None:
        return False, None, f"loss not finite at step {bad}: {got[bad]}"
    r, g = _running_mean(ref[:n]), _running_mean(got[:n])
    diffs = [abs(b - a) / max(abs(a), 1e-12) for a, b in zip(r, g)]
    worst = round(max(diffs), 8)
    what = f"{SMOOTH}-step mean within {RTOL:g} rel + {ATOL:g}"
    off = next((i for i in range(n) if abs(g[i] - r[i]) > ATOL + RTOL * abs(r[i])), None)
    if off is None:
        return True, worst, f"{what}: ok ({n} steps)"
    return False, worst, f"{what}: diverged at step {off}: {r[off]:.6g} vs {g[off]:.6g}"


def _check_same(
    ref: list[float], got: list[float], cuda: bool, noise: Optional[float]
) -> tuple[bool, Optional[float], str]:
    diffs = [abs(b - a) / max(abs(a), 1e-12) for a, b in zip(ref, got)]
    worst_i = max(range(len(diffs)), key=diffs.__getitem__)
    worst = diffs[worst_i]
    tol = max(SAME_RTOL_CUDA, 2 * (noise or 0.0)) if cuda else 0.0
    what = "bitwise equal" if not cuda else f"equal within {tol:.2g}"
    if worst <= tol:
        return True, round(worst, 8), f"{what}: ok ({len(ref)} steps)"
    return (
        False,
        round(worst, 8),
        f"{what}: diverged at step {worst_i}: {ref[worst_i]:.6g} vs {got[worst_i]:.6g}",
    )


def _running_mean(xs: list[float]) -> list[float]:
    out, acc = [], 0.0
    for i, x in enumerate(xs):
        acc += x - (xs[i - SMOOTH] if i >= SMOOTH else 0.0)
        out.append(acc / min(i + 1, SMOOTH))
    return out


def run_noise(base: dict[str, Any], repeat: dict[str, Any]) -> dict[str, Optional[float]]:
    """How much two runs of the unmodified script differ: step time (%) and per-step loss (relative)."""
    if repeat.get("status") != "ok" or not base.get("ms_per_step") or not repeat.get("ms_per_step"):
        return {"time_pct": None, "loss_rel_diff": None}
    t = 100 * abs(repeat["ms_per_step"] - base["ms_per_step"]) / base["ms_per_step"]
    n = min(len(base["losses"]), len(repeat["losses"]))
    d = _check_same(base["losses"][:n], repeat["losses"][:n], False, None)[1] if n else None
    return {"time_pct": round(t, 2), "loss_rel_diff": d}


__all__ = ["check_losses", "run_noise", "RTOL", "ATOL", "SMOOTH", "SAME_RTOL_CUDA"]
