"""Hugging Face accelerate: its idle sources and settings (a hand-written loop; the callback is profile_steps)."""

from __future__ import annotations

from ...vocabulary import Cause
from ._table import Framework, FrameworkEntry, FrameworkSetting

NAME = "accelerate"

GATHER_EACH_STEP = FrameworkEntry(
    name="accelerate_gather_each_step",
    framework=NAME,
    title="accelerate gathers a value from every process each training step (accelerator.gather / "
    "gather_for_metrics in the loop)",
    frames=(
        ("accelerate/accelerator.py", ("gather", "gather_for_metrics", "reduce")),
        ("accelerate/utils/operations.py", ("gather", "gather_object", "reduce")),
    ),
    order=50,
    fix="Gather once per logging interval or epoch, not every step: keep a running sum on the device and "
    "gather that. Each gather is an all-gather that every rank waits for, and reading its result waits "
    "for the GPU.",
    code="running += loss.detach()   # no sync\n"
    "if step % log_every == 0:\n"
    "    gathered = accelerator.gather_for_metrics(running)   # one all-gather per interval\n"
    "    print(gathered.mean().item() / log_every)\n"
    "    running.zero_()",
)

SETTINGS = (
    FrameworkSetting(
        NAME,
        Cause.FP32_MATH,
        'Let accelerate run the forward under autocast: Accelerator(mixed_precision="bf16").',
        'accelerator = Accelerator(mixed_precision="bf16")',
    ),
)

FRAMEWORK = Framework(
    name=NAME,
    words="accelerate",
    runner_files=("accelerate/accelerator.py(",),
    entries=(GATHER_EACH_STEP,),
    settings=SETTINGS,
    callback="idlehound.integrations:profile_steps",
    docs="docs/frameworks/accelerate.md",
)
