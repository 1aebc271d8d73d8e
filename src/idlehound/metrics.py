"""Definitions of every figure idlehound prints. docs/metrics.md carries the same text (a test checks)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    definition: str
    ideal: Optional[float] = None  # for higher_is_better: value >= ideal is ideal; else value <= ideal
    problem: Optional[float] = None
    higher_is_better: bool = True


METRICS: dict[str, Metric] = {
    m.key: m
    for m in [
        Metric(
            "step_ms",
            "Step time",
            "ms",
            "Mean wall time of a profiled step. A step runs from its ProfilerStep# start to the later of its "
            "host end and the end of the GPU work it launched; steps never overlap.",
        ),
        Metric(
            "unprofiled_step_ms",
            "Step time, unprofiled",
            "ms",
            "Step time of the same run outside the profiled window, where the run folder's run.json has it: the "
            "mean of the steady unprofiled steps (all but the run's first 3 and the first after the window), else "
            "run.json's median. The profiler slows the host, so on a host-bound or CPU-only run it can be far "
            "shorter than the profiled Step time; the findings' figures are shares of the replayed step (Replay, 'Which correction').",
            higher_is_better=False,
        ),
        Metric(
            "gpu_util",
            "GPU busy",
            "%",
            "Share of step time during which the GPU ran at least one kernel, memcpy or memset (union over "
            "streams), on the busiest GPU of the trace.",
            90,
            70,
        ),
        Metric(
            "gpu_idle_ms",
            "GPU idle per step",
            "ms",
            "Step time minus GPU busy time, per step: the time idlehound explains by cause.",
            higher_is_better=False,
        ),
        Metric(
            "kernel_pct",
            "Kernel share",
            "%",
            "Share of step time in the Kernel category of the breakdown (compute kernels, not copies).",
            60,
            40,
        ),
        Metric(
            "dataloader_pct",
            "DataLoader share",
            "%",
            "Share of step time the GPU sat idle while the training loop waited in DataLoader __next__ "
            "(exposed data loading).",
            5,
            30,
            higher_is_better=False,
        ),  # ideal up to 5%: where findings start
        Metric(
            "sm_efficiency",
            "Est. SM efficiency",
            "%",
            "Time-weighted min(1, sum of blocks per SM of the kernels running) over the step time; idle "
            "counts as 0 (the TensorBoard plugin's definition, from Kineto's kernel args).",
            80,
            50,
        ),
        Metric(
            "occupancy",
            "Est. achieved occupancy",
            "%",
            "Kernel-time-weighted mean of Kineto's 'est. achieved occupancy %' kernel arg.",
        ),
        Metric(
            "kernels_per_step",
            "Kernels per step",
            "",
            "Number of GPU kernels in the profiled steps divided by the step count.",
            higher_is_better=False,
        ),
        Metric(
            "median_kernel_us", "Median kernel", "µs", "Median duration of the kernels in the profiled steps."
        ),
        Metric(
            "short_kernel_pct",
            "Kernels shorter than launch",
            "%",
            "Share of directly launched kernels that ran shorter than the host call that launched them "
            "(launch-bound sign).",
            50,
            80,
            higher_is_better=False,
        ),
        Metric(
            "sync_per_step",
            "Sync calls per step",
            "",
            "Blocking host calls per step: cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize, "
            "blocking cudaMemcpy and cudaFree.",
            higher_is_better=False,
        ),
        Metric(
            "tensor_core_pct",
            "Tensor-core share of matmul",
            "%",
            "Share of GEMM/convolution kernel time in tensor-core kernels (judged by kernel name, e.g. "
            "tf32/bf16/nvjet/hmma, or where the name does not tell by the half/bf16/fp8 input type of the matmul or "
            "convolution op that launched it) rather than fp32 CUDA-core kernels (ffma/sgemm).",
            90,
            50,
        ),
        Metric(
            "h2d_gbps",
            "Host-to-device bandwidth",
            "GB/s",
            "Bytes copied host-to-device divided by the copies' GPU time.",
        ),
        Metric(
            "pageable_pct",
            "Pageable share of HtoD bytes",
            "%",
            "Share of host-to-device bytes copied from pageable (not pinned) host memory.",
            0,
            50,
            higher_is_better=False,
        ),
        Metric(
            "peak_mem_pct",
            "Peak reserved memory",
            "%",
            "Peak memory reserved by PyTorch's caching allocator over the device's total memory "
            "(needs profile_memory=True).",
            90,
            95,
            higher_is_better=False,
        ),
    ]
}

# Beyond these a figure cannot be right; the analysis excludes the data behind it with a note (docs/metrics.md).
MAX_EVENT_NS = 86_400 * 10**9  # an event (or step) lasting more than a day
MAX_STEP_MS = 86_400_000.0
MAX_COPY_GBPS = 20_000.0  # above any memory or link bandwidth (HBM3e is about 5,000 GB/s)
MAX_MEMORY_BYTES = float(2**50)  # 1 PiB: no device has that much

BREAKDOWN_DEFINITION = (
    "Each step's time split into exclusive categories claimed in priority order Kernel > Memcpy > Memset > "
    "Communication > Runtime > DataLoader > CPU Exec > Other: each category gets only the time no earlier "
    "category took, so the parts sum to the step time. Everything after Memset is time the GPU was idle."
)

# The idle causes' definitions live with their names in diagnose/_registry.py (IDLE_CAUSE_INFO).


def status(key: str, value: Optional[float]) -> str:
    """'ideal', 'problem', 'fair' or '' for a metric value against its bands."""
    m = METRICS.get(key)
    if m is None or value is None or m.ideal is None or m.problem is None:
        return ""
    if m.higher_is_better:
        return "ideal" if value >= m.ideal else "problem" if value < m.problem else "fair"
    return "ideal" if value <= m.ideal else "problem" if value > m.problem else "fair"
