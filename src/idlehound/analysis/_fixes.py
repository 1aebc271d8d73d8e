"""The replay's fixes: what removing each cause changes in the dependency model (host span rates, GPU op
durations, blocking calls), at the constants the replay uses (data/profiler_cost.json holds each one's range)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..vocabulary import Cause, FixName, FixVariant

GRAPH_HOST_RATE = 0.1  # CUDA graphs: host dispatch+launch cost left per op (conservative)
COMPILE_HOST_RATE = 0.7  # torch.compile, default mode: fused kernels, each still launched from the host. The
# Lightning loop on an H200, unprofiled: forward+backward host time 13.5 -> 9.9 ms compiled (0.73, hooks and
# self.log included); the GPT-2 Trainer's default-mode truth (35.9%) needs 0.62 (docs/measurements/replay-h200.md)
FP32_SPEEDUP = 2.0  # TF32/bf16 tensor cores vs fp32 CUDA-core GEMM (conservative)
PAGEABLE_SPEEDUP = 2.0  # pinned vs pageable host-to-device bandwidth (conservative)
CONV_GAIN = 0.10  # cudnn.benchmark: share of convolution time it saves (a guess the replay cannot check)


@dataclass
class Fix:
    """What one counterfactual changes: host span rates, GPU op durations, blocking calls."""

    host_rate: dict[str, float] = field(default_factory=dict)  # host span kind -> rate
    gpu_speedup: dict[str, float] = field(default_factory=dict)  # GPU op kind -> speed-up
    drop_syncs: set[str] = field(default_factory=set)  # sync groups that no longer block
    loader_ready: bool = False

    def merged(self, other: Fix) -> Fix:
        rate = dict(self.host_rate)
        for k, v in other.host_rate.items():
            rate[k] = min(rate.get(k, 1.0), v)
        speed = dict(self.gpu_speedup)
        for k, v in other.gpu_speedup.items():
            speed[k] = max(speed.get(k, 1.0), v)
        return Fix(rate, speed, self.drop_syncs | other.drop_syncs, self.loader_ready or other.loader_ready)


# The constants the fixes are replayed with (their point values; data/profiler_cost.json holds each one's range).
FIX_CONSTANTS: dict[str, float] = {
    "graph_host_rate": GRAPH_HOST_RATE,
    "compile_host_rate": COMPILE_HOST_RATE,
    "fp32_speedup": FP32_SPEEDUP,
    "pageable_speedup": PAGEABLE_SPEEDUP,
    "conv_gain": CONV_GAIN,
}


def make_fixes(c: dict[str, float]) -> dict[FixName, Fix]:
    """Each finding's cause (and each variant) -> the change its fix makes, at these constants."""
    c = {**FIX_CONSTANTS, **c}
    return {
        Cause.SYNC: Fix(host_rate={"reads": 0.0}, drop_syncs={"sync"}),
        Cause.DATA_LOADING: Fix(loader_ready=True),
        Cause.LAUNCH_BOUND: Fix(host_rate={"launching": c["graph_host_rate"]}),
        Cause.HOST_BOUND: Fix(host_rate={"host_only": 0.0}),
        Cause.FP32_MATH: Fix(gpu_speedup={"fp32": c["fp32_speedup"]}),
        Cause.PAGEABLE_COPY: Fix(
            host_rate={"pageable": 0.0},
            gpu_speedup={"pageable": c["pageable_speedup"]},
            drop_syncs={"pageable"},
        ),
        Cause.MEMORY_CHURN: Fix(host_rate={"allocator": 0.0}, drop_syncs={"allocator"}),
        Cause.CUDNN_BENCHMARK: Fix(gpu_speedup={"conv": 1 / (1 - c["conv_gain"])}),
        # Other ways of fixing a cause: what a framework setting or a tune candidate makes instead of the
        # cause's own fix (torch.compile in its default mode for launch-bound work).
        FixVariant.COMPILE: Fix(host_rate={"launching": c["compile_host_rate"]}),
    }


ALL_FIXES: dict[FixName, Fix] = make_fixes({})
FIXES: dict[Cause, Fix] = {k: v for k, v in ALL_FIXES.items() if isinstance(k, Cause)}
VARIANT_FIXES: dict[FixVariant, Fix] = {k: v for k, v in ALL_FIXES.items() if isinstance(k, FixVariant)}
