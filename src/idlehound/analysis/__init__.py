"""Analysis of a loaded trace: steps, time breakdown, idle gaps by cause, per-metric figures."""

from ._core import Analysis, analyze
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
    SyncSite,
)
from ._source import SourceLoc, SourceMap, load_sidecar, location_text

__all__ = [
    "BREAKDOWN", "IDLE_CAUSES", "Analysis", "CopyStats", "DataLoaderStats", "DeviceInfo", "IdleCause", "IdleLine",
    "KernelGroup", "KernelStats", "MemoryStats", "SourceLoc", "SourceMap", "Step", "SyncSite", "analyze",
    "load_sidecar", "location_text",
]
