"""Hugging Face transformers: the Trainer's own idle sources and settings."""

from __future__ import annotations

from ...vocabulary import Cause
from ._table import Framework, FrameworkEntry, FrameworkSetting

NAME = "transformers"
TRAINER = "transformers/trainer.py"

NAN_INF_FILTER = FrameworkEntry(
    name="hf_nan_inf_filter",
    framework=NAME,
    title="Hugging Face Trainer's NaN/Inf loss check (logging_nan_inf_filter) reads the loss every step",
    frames=((TRAINER, ("_run_epoch", "_inner_training_loop")),),
    innermost=True,
    order=10,
    fix="Turn off the Trainer's per-step NaN/Inf loss check with TrainingArguments(logging_nan_inf_filter="
    "False): the loss then stays on the GPU until the next logging step (a NaN/Inf step is no longer "
    "left out of the logged average).",
    code="args = TrainingArguments(..., logging_nan_inf_filter=False)",
)

EVAL_IN_LOOP = FrameworkEntry(
    name="hf_eval_in_loop",
    framework=NAME,
    title='Hugging Face Trainer runs evaluation inside the training loop (eval_strategy="steps")',
    frames=((TRAINER, ("evaluate", "evaluation_loop", "prediction_step")),),
    order=60,
    fix='Evaluate less often: eval_strategy="epoch" or a larger eval_steps; each evaluation stops training '
    "and reads its results on the host.",
    code='args = TrainingArguments(..., eval_strategy="epoch")   # or eval_steps=2000',
)

SETTINGS = (
    FrameworkSetting(
        NAME,
        Cause.LAUNCH_BOUND,
        "Let the Trainer compile the model: torch_compile=True fuses ops into fewer kernels, and "
        'torch_compile_mode="reduce-overhead" also replays each step\'s kernels as CUDA graphs (one launch '
        "each). The first steps compile.",
        'args = TrainingArguments(..., torch_compile=True, torch_compile_mode="reduce-overhead")',
    ),
    FrameworkSetting(
        NAME,
        Cause.DATA_LOADING,
        "The Trainer builds the DataLoader: give it workers, pinned memory and workers kept between epochs "
        "through TrainingArguments.",
        "args = TrainingArguments(..., dataloader_num_workers={workers}, dataloader_pin_memory=True,\n"
        "                         dataloader_persistent_workers=True, dataloader_prefetch_factor=4)",
    ),
    FrameworkSetting(
        NAME,
        Cause.FP32_MATH,
        "Let the Trainer run the matmuls on tensor cores: bf16=True (autocast, fp32 master weights), or "
        "tf32=True to keep fp32 tensors with TF32 matmuls.",
        "args = TrainingArguments(..., bf16=True)   # or tf32=True",
    ),
)

FRAMEWORK = Framework(
    name=NAME,
    words="the Hugging Face Trainer",
    runner_files=(TRAINER + "(",),
    entries=(NAN_INF_FILTER, EVAL_IN_LOOP),
    settings=SETTINGS,
    tune_changes=("hf_args",),
    tune_candidates=("hf_workers", "hf_nan_filter", "hf_group_by_length", "hf_tf32", "hf_bf16", "hf_compile"),
    callback="idlehound.integrations.transformers:IdlehoundCallback",
    docs="docs/frameworks/huggingface.md",
)
