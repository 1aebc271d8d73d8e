"""Analysis of a loaded trace: steps, time breakdown, idle gaps by cause, per-metric figures."""

import sys as _sys

from .. import runfolder
from . import _roles as roles  # event roles (kernel, memcpy, sync...), read by the diagnosis too
from ._core import Analysis, analyze
from ._model import (
    BREAKDOWN,
    IDLE_CAUSES,
    CopyStats,
    DataLoaderStats,
    DeviceInfo,
    IdleLine,
    KernelGroup,
    KernelStats,
    MemoryStats,
    Step,
    SyncSite,
)
from ._replay import FIXES, Fix
from ._source import SourceLoc, SourceMap, load_sidecar, parse_frame

# Moved to idlehound.runfolder (git mv, so merges follow the file); the old name stays importable for
# tests/unit/test_sampler.py without a file at the old path.
_sys.modules.setdefault(__name__ + "._runfiles", runfolder)

__all__ = [
    "BREAKDOWN", "FIXES", "IDLE_CAUSES", "Analysis", "CopyStats", "DataLoaderStats", "DeviceInfo", "Fix", "IdleLine",
    "KernelGroup", "KernelStats", "MemoryStats", "SourceLoc", "SourceMap", "Step", "SyncSite", "analyze",
    "load_sidecar", "parse_frame", "roles",
]
