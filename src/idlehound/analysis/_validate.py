"""What cannot be right in a trace, found before it reaches a figure: excluded with a note, or an error.

Each rule states what it excludes in the report's notes (docs/metrics.md, "Exclusions"), so a figure is
never silently built on impossible data.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..errors import TraceError
from ..metrics import MAX_COPY_GBPS, MAX_EVENT_NS  # noqa: F401 (re-exported)
from ..metrics import MAX_MEMORY_BYTES as MAX_MEMORY_BYTES  # re-exported: _steps reads it here
from ..trace import Trace
from ._model import Step

MIN_DEVICE_MEMORY = 2**26  # 64 MiB: less is no GPU that can train


def durations(trace: Trace) -> None:
    """Events lasting more than a day cannot be part of a profile: they count as 0 long (once per trace)."""
    ev = trace.events
    bad = ev.dur > MAX_EVENT_NS
    if bad.any():
        ev.dur = np.where(bad, 0, ev.dur)
        trace.warnings.append(
            f"excluded the duration of {int(bad.sum())} event(s) lasting more than a day "
            "(impossible in a profile): counted as 0 long"
        )


def nonempty(trace: Trace, steps_: list[Step], notes: list[str]) -> list[Step]:
    kept = [s for s in steps_ if s.duration_ns > 0]
    if len(kept) < len(steps_):
        notes.append(
            f"excluded {len(steps_) - len(kept)} step(s) of zero duration "
            f"({_numbers([s.number for s in steps_ if s.duration_ns <= 0])})"
        )
    if not kept:
        raise TraceError(trace.path, "no step with a duration above zero: nothing to measure")
    return kept


def step_number(name: str) -> Optional[str]:
    """The digits of a ProfilerStep#N name when N is a plausible step number, else None."""
    digits = name[len("ProfilerStep#") :]
    return digits if len(digits) <= 18 else None


def _numbers(nums: list[Any]) -> str:
    shown = ", ".join("#" + str(n) if n is not None else "(whole trace)" for n in nums[:5])
    return shown + (f" and {len(nums) - 5} more" if len(nums) > 5 else "")


def copy_bytes(nbytes: np.ndarray, dur_ns: np.ndarray, notes: list[str]) -> np.ndarray:
    """Copy sizes that no link could move in the recorded time (or negative) become unknown (0)."""
    nb = np.where(np.isfinite(nbytes), nbytes, 0.0)
    bad = (nb < 0) | (nb > MAX_COPY_GBPS * np.maximum(dur_ns, 1.0)) | (nb > MAX_MEMORY_BYTES)
    if bad.any():
        notes.append(
            f"excluded the byte counts of {int(bad.sum())} copy event(s): negative or faster than "
            f"{MAX_COPY_GBPS:,.0f} GB/s (impossible)"
        )
    return np.where(bad, 0.0, nb)


def memory_samples(
    allocated: np.ndarray, reserved: np.ndarray, capacity: Optional[float], notes: list[str]
) -> np.ndarray:
    """Which [memory] samples can be right: 0 <= allocated <= reserved <= the device's memory."""
    top = capacity if capacity else MAX_MEMORY_BYTES
    ok = (allocated >= 0) & (reserved >= 0) & (allocated <= reserved) & (reserved <= top)
    ok &= np.isfinite(allocated) & np.isfinite(reserved)
    if not ok.all():
        notes.append(
            f"excluded {int((~ok).sum())} memory sample(s) with impossible sizes (negative, allocated "
            "above reserved, or above the device's memory)"
        )
    return ok


def occupancy(occ: np.ndarray, notes: list[str]) -> np.ndarray:
    """Kineto's occupancy is a percentage: values outside 0-100 are excluded."""
    bad = np.isfinite(occ) & ((occ < 0) | (occ > 100))
    if bad.any():
        notes.append(f"excluded the occupancy of {int(bad.sum())} kernel(s): outside 0-100 %")
    return np.where(bad, np.nan, occ)


def device_value(value: object, lo: float, hi: float) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and lo <= value <= hi
