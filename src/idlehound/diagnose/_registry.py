"""The texts of the vocabulary's names (idlehound/vocabulary.py): finding causes and idle causes.

Every other place (rules, replay fixes, renderers, docs/metrics.md, docs/json-schema.md) reads or is checked
against this module (tests/test_registry.py). Values are the strings the JSON documents carry.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..vocabulary import Cause, IdleCause, Kind, Severity

DOCS = "docs/metrics.md#findings"


@dataclass(frozen=True)
class CauseInfo:
    cause: Cause
    title: str  # display title (a rule may phrase its finding's title more precisely)
    kind: Kind
    fix: str  # the default fix; a rule may give a more specific one from what the trace shows
    doc: str = DOCS


CAUSES: dict[Cause, CauseInfo] = {
    i.cause: i
    for i in [
        CauseInfo(
            Cause.DATA_LOADING,
            "Data loading starves the GPU",
            Kind.IDLE,
            "Load batches in worker processes so they are ready before the GPU needs them, pin host memory "
            "and copy asynchronously.",
        ),
        CauseInfo(
            Cause.SYNC,
            "CPU-GPU sync points in the loop",
            Kind.IDLE,
            "Move the host read out of the training loop.",
        ),
        CauseInfo(
            Cause.PAGEABLE_COPY,
            "Pageable host-to-device copies",
            Kind.IDLE,
            "Copy from pinned (page-locked) memory with non_blocking=True: the copy runs faster, "
            "does not block the host, and can overlap compute.",
        ),
        CauseInfo(
            Cause.LAUNCH_BOUND,
            "Launch-bound: many tiny kernels",
            Kind.IDLE,
            "Give the GPU more work per launch: a larger batch, fused ops (torch.compile), CUDA graphs to "
            "replay a whole step with one launch, and foreach/fused optimizers.",
        ),
        CauseInfo(
            Cause.HOST_BOUND,
            "Host-bound: Python/CPU work between GPU launches",
            Kind.IDLE,
            "Move host work out of the step: precompute on the GPU, avoid per-sample Python loops and CPU "
            "tensor math inside the loop, and let torch.compile remove Python overhead.",
        ),
        CauseInfo(
            Cause.FP32_MATH,
            "fp32 math without tensor cores",
            Kind.SLOW,
            "Let matrix math use tensor cores: bf16 autocast (best), or at least TF32 for fp32 matmuls and "
            "convolutions.",
        ),
        CauseInfo(
            Cause.CUDNN_BENCHMARK,
            "cudnn.benchmark is off",
            Kind.SLOW,
            "With fixed input shapes, let cuDNN time its algorithms once and keep the fastest.",
        ),
        CauseInfo(
            Cause.MEMORY_CHURN,
            "Memory churn: allocator calls in the loop",
            Kind.IDLE,
            "Let the caching allocator reuse its memory: keep tensor shapes stable so cached blocks fit, and "
            "let segments grow instead of allocating new ones.",
        ),
        CauseInfo(
            Cause.NEAR_OOM,
            "Near out of memory",
            Kind.RISK,
            "Memory is nearly full: one larger batch or a fragmented cache will OOM. Use bf16 autocast, "
            "activation checkpointing, or a smaller batch with gradient accumulation.",
        ),
        CauseInfo(
            Cause.FRAMEWORK_SYNC,
            "On a GPU this would wait: a framework reads tensor values",
            Kind.RISK,
            "Set the framework to read logged values every N steps or per epoch, not every step.",
        ),
    ]
}


@dataclass(frozen=True)
class IdleCauseInfo:
    cause: IdleCause
    label: str  # table and legend label
    during: str  # "mostly <during>" in the headline
    definition: str  # docs/metrics.md carries the same text (a test checks)


IDLE_CAUSE_INFO: dict[IdleCause, IdleCauseInfo] = {
    i.cause: i
    for i in [
        IdleCauseInfo(
            IdleCause.DATA_LOADING,
            "waiting for data",
            "waiting for data",
            "GPU idle while the host waited in DataLoader __next__.",
        ),
        IdleCauseInfo(
            IdleCause.ALLOCATOR,
            "memory allocation",
            "in memory allocation",
            "GPU idle while the host was inside device memory allocation calls (cudaMalloc/cudaFree: "
            "caching-allocator misses, empty_cache()).",
        ),
        IdleCauseInfo(
            IdleCause.SYNC,
            "CPU-GPU syncs",
            "around CPU-GPU syncs",
            "GPU idle caused by a blocking host read: a gap that opened while a sync call waited (the queue "
            "drained), or host time inside the user call that synced (print, .item(), .cpu()). A call that spans "
            "the start of a step (`trainer.fit()`, `Trainer.train()`, your own `train()`) is the loop itself: its "
            "host time is not counted as sync time.",
        ),
        IdleCauseInfo(
            IdleCause.LAUNCH,
            "kernel launch overhead",
            "in kernel launch overhead",
            "GPU idle while the launching thread was inside kernel-launch calls or inside ops that launch "
            "GPU work (dispatch overhead), and all host time in idle gaps shorter than 250 µs (per-op "
            "overhead between kernels).",
        ),
        IdleCauseInfo(
            IdleCause.CPU_OPS,
            "CPU-side ops",
            "in CPU-side ops",
            "GPU idle while the host ran torch ops that launch no GPU work (CPU tensor math).",
        ),
        IdleCauseInfo(
            IdleCause.PYTHON,
            "Python on the host",
            "in Python on the host",
            "GPU idle while the host ran Python outside any torch op, or did something the profiler "
            "does not record.",
        ),
    ]
}

# Plain-string views for renderers that key by the document's strings.
IDLE_CAUSE_LABELS: dict[str, str] = {c.value: i.label for c, i in IDLE_CAUSE_INFO.items()}
IDLE_CAUSE_DEFINITIONS: dict[str, str] = {c.value: i.definition for c, i in IDLE_CAUSE_INFO.items()}


__all__ = [
    "CAUSES",
    "Cause",
    "CauseInfo",
    "IDLE_CAUSE_DEFINITIONS",
    "IDLE_CAUSE_INFO",
    "IDLE_CAUSE_LABELS",
    "IdleCause",
    "IdleCauseInfo",
    "Kind",
    "Severity",
]
