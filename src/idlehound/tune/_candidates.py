"""Tuning candidates: what each changes, how it is injected at start-up, and how its losses are checked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..diagnose.dataloader import worker_sweep
from ..vocabulary import Cause, FixName, FixVariant, Math, OutcomeStatus
from ._changes import FUSED_OPTIMIZERS as FUSED_OPTIMIZERS  # one constant, owned by the optimizer change
from ._changes import no_op


@dataclass(frozen=True)
class Candidate:
    name: str
    label: str
    settings: dict[str, Any]  # applied by the child at start-up (see _child.apply)
    math: Math  # "same": losses must match the baseline; "precision": within tolerance
    needs_loader: bool = False
    needs_cuda: bool = False
    causes: tuple[Cause, ...] = ()  # diagnosis causes that propose it
    why: str = ""
    framework: str = (
        ""  # "transformers" / "lightning": tried only where the script builds that framework's object
    )
    fixes: tuple[FixName, ...] = ()  # the replay's fixes (analysis ALL_FIXES) it makes: its predicted gain
    group: str = (
        ""  # in a stack, a candidate replaces one of the same group (as a loader setting replaces another)
    )
    fact: str = ""  # also proposed when the baseline's facts show this (a per-step cost a profile may hide)


def worker_counts(cores: int) -> list[int]:
    """A small sweep around the suggested count (the refinement tries counts in between)."""
    return worker_sweep(cores)


def refine_workers(tried: list[int], best: int, cores: int) -> list[int]:
    """Worker counts half-way between the best of the sweep and its neighbours, not tried yet."""
    below = max((n for n in tried if n < best), default=None)
    above = min((n for n in tried if n > best), default=None)
    mids = {(best + n) // 2 for n in (below, above) if n is not None}
    return sorted(n for n in mids if n not in tried and 1 <= n <= cores)


def workers_candidate(n: int, cuda: bool) -> Candidate:
    settings: dict[str, Any] = {
        "loader": {"num_workers": n, "persistent_workers": True, "pin_memory": cuda, "prefetch_factor": 4}
    }
    if cuda:
        settings["non_blocking"] = True
    label = f"DataLoader num_workers={n}, persistent" + (", pinned, non_blocking copies" if cuda else "")
    return Candidate(
        f"workers{n}",
        label,
        settings,
        "same",
        needs_loader=True,
        causes=(Cause.DATA_LOADING, Cause.PAGEABLE_COPY),
        fixes=(Cause.DATA_LOADING,) + ((Cause.PAGEABLE_COPY,) if cuda else ()),
        why="load batches in worker processes while the GPU computes",
    )


def host_threads(cores: int) -> int:
    """Intra-op threads for a training process that feeds a GPU: few, so loader workers keep their cores."""
    return max(1, min(4, cores // 4))


def all_candidates(cores: int, cuda: bool) -> list[Candidate]:
    """Loader candidates first (stage 1), then the rest in the order they are stacked (stage 2): what cuts the
    host's time per step before what cuts the GPU's, which cannot show while the host paces the GPU, and
    cudnn.benchmark last, to time algorithms for the layout and dtype the others settled."""
    loader = [workers_candidate(n, cuda) for n in worker_counts(cores)]
    threads = host_threads(cores)
    return (
        loader
        + [
            Candidate(
                "pin_memory",
                "DataLoader pin_memory=True, non_blocking copies",
                {"loader": {"pin_memory": True}, "non_blocking": True},
                "same",
                needs_loader=True,
                needs_cuda=True,
                causes=(Cause.PAGEABLE_COPY, Cause.DATA_LOADING),
                fixes=(Cause.PAGEABLE_COPY,),
                why="copy batches from page-locked memory without making the host wait",
            ),
            Candidate(
                "cuda_graphs",
                "CUDA graphs: the model's forward and backward recorded once, replayed each step",
                {"cuda_graphs": True},
                "same",
                needs_cuda=True,
                causes=(Cause.LAUNCH_BOUND, Cause.HOST_BOUND),
                fixes=(Cause.LAUNCH_BOUND,),
                group="graphs",
                why="one launch replays every kernel of the forward and backward, so Python no longer paces "
                "the GPU",
            ),
            Candidate(
                "compile",
                "torch.compile of the model (model.compile(), in place)",
                {"compile": True},
                "precision",
                causes=(Cause.LAUNCH_BOUND, Cause.HOST_BOUND),
                fixes=(FixVariant.COMPILE,),
                group="graphs",
                why="fewer, fused kernels and less Python per step; compiled once, then from the cache",
            ),
            Candidate(
                "fused_optimizer",
                "fused / foreach optimizer",
                {"fused_optimizer": True},
                "precision",
                causes=(Cause.LAUNCH_BOUND, Cause.HOST_BOUND),
                why="one kernel for all parameters",
            ),
            Candidate(
                "host_threads",
                f"torch.set_num_threads({threads}) in the training process",
                {"threads": threads},
                "same",
                needs_cuda=True,
                causes=(Cause.DATA_LOADING, Cause.HOST_BOUND),
                why="idle intra-op threads of the training process spin on the cores the loader workers need",
            ),
            Candidate(
                "tf32",
                "TF32 matmul and convolutions",
                {"tf32": True},
                "precision",
                needs_cuda=True,
                causes=(Cause.FP32_MATH,),
                fixes=(Cause.FP32_MATH,),
                why="run fp32 matrix math on tensor cores",
            ),
            Candidate(
                "channels_last",
                "the model's weights in channels_last memory format",
                {"channels_last": True},
                "precision",
                needs_cuda=True,
                causes=(Cause.FP32_MATH,),
                why="tensor-core convolutions read NHWC; NCHW costs layout transposes around each one",
            ),
            Candidate(
                "bf16",
                "bf16 autocast around the model's forward",
                {"autocast": "bfloat16"},
                "precision",
                causes=(Cause.FP32_MATH,),
                fixes=(Cause.FP32_MATH,),
                why="half the bytes, tensor cores",
            ),
        ]
        + framework_candidates(cores, cuda)
        + [
            Candidate(
                "cudnn_benchmark",
                "torch.backends.cudnn.benchmark = True",
                {"cudnn_benchmark": True},
                "precision",
                needs_cuda=True,
                causes=(Cause.CUDNN_BENCHMARK, Cause.FP32_MATH),
                fixes=(Cause.CUDNN_BENCHMARK,),
                why="let cuDNN pick the fastest convolution algorithm",
            ),
        ]
    )


def framework_candidates(cores: int, cuda: bool) -> list[Candidate]:
    """The settings of the training loops people do not write themselves: transformers.Trainer's
    TrainingArguments and Lightning's Trainer, injected into the object the script builds (see _child)."""
    n = max(2, cores // 2)
    hf, pl = "transformers", "lightning"
    return [
        Candidate(
            "hf_workers",
            f"TrainingArguments: dataloader_num_workers={n}, persistent" + (", pinned" if cuda else ""),
            {
                "hf_args": {
                    "dataloader_num_workers": n,
                    "dataloader_persistent_workers": True,
                    "dataloader_pin_memory": cuda,
                }
            },
            "same",
            needs_loader=True,
            framework=hf,
            causes=(Cause.DATA_LOADING, Cause.PAGEABLE_COPY),
            fixes=(Cause.DATA_LOADING,),
            why="the Trainer loads batches in worker processes",
        ),
        Candidate(
            "hf_nan_filter",
            "TrainingArguments: logging_nan_inf_filter=False",
            {"hf_args": {"logging_nan_inf_filter": False}},
            "same",
            framework=hf,
            causes=(Cause.HOST_BOUND, Cause.SYNC, Cause.LAUNCH_BOUND),
            fixes=(Cause.SYNC,),
            why="the filter checks every step's loss for nan/inf on the host: a GPU sync per step",
        ),
        Candidate(
            "hf_group_by_length",
            "TrainingArguments: group_by_length=True",
            {"hf_args": {"group_by_length": True}},
            "precision",  # other samples share a batch: the losses are checked on the smoothed curve
            framework=hf,
            fact="padded_share",
            why="batches of samples of similar length carry less padding: less GPU work spent on pad tokens",
        ),
        Candidate(
            "hf_tf32",
            "TrainingArguments: tf32=True",
            {"hf_args": {"tf32": True}},
            "precision",
            needs_cuda=True,
            framework=hf,
            causes=(Cause.FP32_MATH,),
            fixes=(Cause.FP32_MATH,),
            why="fp32 matmuls on tensor cores",
        ),
        Candidate(
            "hf_bf16",
            "TrainingArguments: bf16=True",
            {"hf_args": {"bf16": True}},
            "precision",
            needs_cuda=True,
            framework=hf,
            causes=(Cause.FP32_MATH,),
            fixes=(Cause.FP32_MATH,),
            why="bf16 autocast in the Trainer",
        ),
        Candidate(
            "hf_compile",
            "TrainingArguments: torch_compile=True",
            {"hf_args": {"torch_compile": True}},
            "precision",
            framework=hf,
            causes=(Cause.LAUNCH_BOUND, Cause.HOST_BOUND),
            fixes=(FixVariant.COMPILE,),
            why="fewer, fused kernels for the model's forward and backward",
        ),
        Candidate(
            "pl_bf16",
            "Lightning Trainer: precision='bf16-mixed'",
            {"pl_args": {"precision": "bf16-mixed"}},
            "precision",
            needs_cuda=True,
            framework=pl,
            causes=(Cause.FP32_MATH,),
            fixes=(Cause.FP32_MATH,),
            why="bf16 autocast",
        ),
        Candidate(
            "pl_benchmark",
            "Lightning Trainer: benchmark=True",
            {"pl_args": {"benchmark": True}},
            "precision",
            needs_cuda=True,
            framework=pl,
            causes=(Cause.CUDNN_BENCHMARK, Cause.FP32_MATH),
            fixes=(Cause.CUDNN_BENCHMARK,),
            why="let cuDNN pick the fastest convolution algorithm",
        ),
        Candidate(
            "pl_log_epoch",
            "Lightning: self.log(..., prog_bar=True) per epoch, not per step (on_step=False, on_epoch=True)",
            {"pl_log_epoch": True},
            "same",
            framework=pl,
            causes=(Cause.SYNC, Cause.HOST_BOUND),
            fixes=(Cause.SYNC,),
            fact="lightning_step_prog_bar",
            why="the progress bar reads a tensor logged per step on the host every batch: a GPU sync per step",
        ),
        Candidate(
            "pl_compile",
            "Lightning: trainer.fit(torch.compile(module))",
            {"pl_compile": True},
            "precision",
            framework=pl,
            causes=(Cause.LAUNCH_BOUND, Cause.HOST_BOUND),
            fixes=(FixVariant.COMPILE,),
            why="fewer, fused kernels for the module's forward",
        ),
    ]


FRAMEWORK_FACTS = {
    "transformers": ("transformers_args", "hf_args", "the script builds no TrainingArguments"),
    "lightning": ("lightning_args", "pl_args", "the script builds no Lightning Trainer"),
}


def not_applicable(cand: Candidate, facts: dict[str, Any]) -> str:
    """Why cand would change nothing in this script as it runs (from the baseline's facts), or "": each change
    of the registry (_changes) it makes says for itself."""
    return no_op(cand.settings, facts)


@dataclass
class Outcome:
    candidate: str
    label: str
    status: OutcomeStatus = "ok"  # ok (ran, math kept), rejected, skipped, failed, not applicable
    reason: str = ""
    samples_per_s: float | None = None
    steps_per_s: float | None = None
    speedup: float | None = None
    gpu_util: float | None = None
    loss_check: str = ""
    max_rel_diff: float | None = None
    on_top_of: str | None = None  # stage 2: the stack this one was measured on top of ("workers8 + tf32")
    gain: float | None = None  # stage 2: speed-up over on_top_of alone
    settings: dict[str, Any] = field(default_factory=dict)
    graphed_inputs: list[dict[str, Any]] | None = None  # cuda_graphs: shape and dtype of each recorded input
    effect: str = ""  # faster, slower, no measurable effect: the 95% interval over its reference (version 2)
    speedup_ci: list[float] | None = None  # 95% interval of speedup
    gain_ci: list[float] | None = None  # 95% interval of gain
    rounds: int = 0  # timed runs behind the figures
    warmup_note: str = ""  # how the warm-up was raised or cut for this variant
    predicted: float | None = (
        None  # the replay's speed-up over the same reference as gain/speedup (version 3)
    )
