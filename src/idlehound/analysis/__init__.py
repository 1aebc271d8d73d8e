"""Analysis of a loaded trace: steps, time breakdown, idle gaps by cause, per-metric figures."""

from . import _roles as roles  # event roles (kernel, memcpy, sync...), read by the diagnosis too
from ._core import Analysis, IdleGaps, analyze, blocking_waits, idle_gaps
from ._fixes import ALL_FIXES, CONV_GAIN, FIXES, FP32_SPEEDUP, PAGEABLE_SPEEDUP, Fix, make_fixes
from ._model import (
    BREAKDOWN,
    IDLE_CAUSES,
    CopyStats,
    DataLoaderStats,
    DeviceInfo,
    IdleCause,
    IdleLine,
    KernelGroup,
    KernelStats,
    MemoryStats,
    Step,
    StrEnum,
    SyncSite,
)
from ._observer import FITTED as FITTED_CORRECTION
from ._observer import OBSERVER_RATE, fix_constant_ranges, overhead_at, unprofiled_step
from ._replay import LOADER_READY_NS
from ._source import NO_USER_FRAME, SourceLoc, SourceMap, load_sidecar, location_text, parse_frame

__all__ = [
    "unprofiled_step",
    "FITTED_CORRECTION",
    "BREAKDOWN",
    "CONV_GAIN",
    "ALL_FIXES",
    "FIXES",
    "FP32_SPEEDUP",
    "LOADER_READY_NS",
    "fix_constant_ranges",
    "make_fixes",
    "overhead_at",
    "IDLE_CAUSES",
    "NO_USER_FRAME",
    "OBSERVER_RATE",
    "PAGEABLE_SPEEDUP",
    "StrEnum",
    "Analysis",
    "CopyStats",
    "DataLoaderStats",
    "DeviceInfo",
    "Fix",
    "IdleCause",
    "IdleGaps",
    "IdleLine",
    "KernelGroup",
    "KernelStats",
    "MemoryStats",
    "SourceLoc",
    "SourceMap",
    "Step",
    "SyncSite",
    "analyze",
    "blocking_waits",
    "idle_gaps",
    "load_sidecar",
    "location_text",
    "parse_frame",
    "roles",
]
