"""What an analysis produces. Plain dataclasses; every figure is defined in docs/metrics.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..vocabulary import IdleCause as IdleCause  # re-exported: the vocabulary owns it
from ..vocabulary import StrEnum as StrEnum
from ._source import SourceLoc

BREAKDOWN = ("Kernel", "Memcpy", "Memset", "Communication", "Runtime", "DataLoader", "CPU Exec", "Other")


IDLE_CAUSES: tuple[str, ...] = tuple(c.value for c in IdleCause)


@dataclass
class Step:
    number: Optional[int]
    start_ns: int
    end_ns: int
    host_start_ns: int
    host_end_ns: int
    gpu_busy_ns: int = 0
    breakdown_ns: dict[str, int] = field(default_factory=dict)
    idle_ns: dict[str, int] = field(default_factory=dict)
    kernels: int = 0
    sync_calls: int = 0

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass
class SyncSite:
    """Blocking host calls grouped by kind, op and source line."""

    kind: str
    op: str
    call: str
    location: Optional[SourceLoc]
    python: str  # innermost Python frame, e.g. "<built-in method item of Tensor object>"
    count: int = 0
    idle_after_ns: int = 0
    blocked_ns: int = 0


@dataclass
class IdleLine:
    cause: str
    location: Optional[SourceLoc]
    idle_ns: int
    gaps: int


@dataclass
class CopyStats:
    direction: str
    count: int = 0
    bytes: float = 0.0
    time_ns: int = 0
    pageable_bytes: float = 0.0
    pageable_count: int = 0

    @property
    def bandwidth_gbps(self) -> Optional[float]:
        return self.bytes / self.time_ns if self.time_ns > 0 else None


@dataclass
class KernelGroup:
    name: str
    count: int
    time_ns: int
    precision: str  # "fp32", "tensor_core" or ""


@dataclass
class KernelStats:
    count: int = 0
    time_ns: int = 0
    p50_us: Optional[float] = None
    p90_us: Optional[float] = None
    max_us: Optional[float] = None
    shorter_than_launch: Optional[float] = None  # share of kernels shorter than their launch call
    launches_with_duration: int = 0
    slow_launches: int = 0  # one-off launch calls far slower than the rest (first launch, module load)
    slow_launch_max_us: float = 0.0
    slow_launch_idle_ns: int = 0  # GPU idle time inside those calls, not per-launch overhead
    top: list[KernelGroup] = field(default_factory=list)
    fp32_matmul_ns: int = 0
    conv_ns: int = 0  # kernels launched by convolution ops
    conv_location: Optional[SourceLoc] = None  # user line of the longest convolution op
    tensor_core_ns: int = 0
    fp32_matmul_ops: list[str] = field(default_factory=list)
    fp32_location: Optional[SourceLoc] = None  # user line of the longest fp32 GEMM/conv op
    sm_efficiency: Optional[float] = None
    occupancy: Optional[float] = None


@dataclass
class MemoryStats:
    recorded: bool = False
    peak_allocated: Optional[float] = None
    peak_reserved: Optional[float] = None
    capacity: Optional[float] = None
    allocs_per_step: Optional[float] = None
    empty_cache_calls: int = 0
    allocator_calls: int = 0  # cudaMalloc/cudaFree inside the steps
    curve: list[list[float]] = field(default_factory=list)  # [ns since the first step, bytes allocated]


@dataclass
class DataLoaderStats:
    host_ns: int = 0  # time inside DataLoader __next__ over all steps
    calls: int = 0
    iterator: str = ""  # "_SingleProcessDataLoaderIter" / "_MultiProcessingDataLoaderIter" / ""
    location: Optional[SourceLoc] = None

    @property
    def workers_in_use(self) -> Optional[bool]:
        if not self.iterator:
            return None
        return "MultiProcessing" in self.iterator


@dataclass
class DeviceInfo:
    name: str = ""
    index: Optional[int] = None
    compute_capability: Optional[tuple[int, int]] = None
    memory_bytes: Optional[float] = None
    num_sms: Optional[int] = None
    devices_seen: list[int] = field(default_factory=list)
    accelerator: str = (
        ""  # "CUDA", "ROCm", or another device the trace shows ("MTIA", "XPU", ...); "" for none
    )
    unmeasured: dict[str, int] = field(default_factory=dict)  # device event categories not measured -> count
