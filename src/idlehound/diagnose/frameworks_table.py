"""Known idle sources inside training frameworks, as data: one entry per source.

`frames` says how to recognise the source in a trace: a (file suffix, function names) pair that must appear in
the python_function stack above the sync point. With `innermost`, only the nearest library frame counts (the
sync sits directly in that function, as the Trainer's NaN/Inf check does), so a sync deeper in a call it makes
(the optimizer's, say) does not match. Suffixes name the library's file, never a line: lines move between
versions. Adding a source = one entry here + one test on a recording (tests/test_frameworks.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FrameworkEntry:
    name: str
    framework: str
    title: str
    frames: tuple[tuple[str, tuple[str, ...]], ...]
    fix: str
    code: str
    innermost: bool = False
    # the library call in the user's code that sets the source up (`self.log(...)`): the reads happen later,
    # inside the framework's loop, so the user line above them is `.fit()`; the finding points here instead
    set_at: tuple[tuple[str, tuple[str, ...]], ...] = ()


ENTRIES: tuple[FrameworkEntry, ...] = (
    FrameworkEntry(
        name="hf_nan_inf_filter",
        framework="transformers",
        title="Hugging Face Trainer's NaN/Inf loss check (logging_nan_inf_filter) reads the loss every step",
        frames=(("transformers/trainer.py", ("_run_epoch", "_inner_training_loop")),),
        innermost=True,
        fix="Turn off the Trainer's per-step NaN/Inf loss check with TrainingArguments(logging_nan_inf_filter="
        "False): the loss then stays on the GPU until the next logging step (a NaN/Inf step is no longer "
        "left out of the logged average).",
        code="args = TrainingArguments(..., logging_nan_inf_filter=False)",
    ),
    FrameworkEntry(
        name="lightning_step_log",
        framework="lightning",
        title="Lightning converts per-step logged tensors (self.log on_step / prog_bar) to Python numbers "
        "every batch",
        frames=(
            (
                "trainer/connectors/logger_connector/logger_connector.py",
                ("metrics", "progress_bar_metrics", "on_batch_end", "update_train_step_metrics"),
            ),
        ),
        fix="Log tensors per epoch, not per step: self.log(..., on_step=False, on_epoch=True) keeps the running "
        "value on the device and reads it once per epoch; log a per-step value only every N steps.",
        code='self.log("train_loss", loss, prog_bar=True, on_step=False, on_epoch=True)',
        set_at=(("pytorch/core/module.py", ("log", "log_dict")),),
    ),
    FrameworkEntry(
        name="lightning_sync_dist",
        framework="lightning",
        title="Lightning synchronises a logged value across processes every step (self.log(..., sync_dist=True) "
        "with on_step)",
        frames=(("fabric/utilities/distributed.py", ("_sync_ddp", "_sync_ddp_if_available")),),
        fix="Reduce logged values across processes once per epoch: self.log(..., on_step=False, on_epoch=True, "
        "sync_dist=True). Each per-step sync_dist is a barrier and an all-reduce that every rank waits for.",
        code='self.log("train_loss", loss, on_step=False, on_epoch=True, sync_dist=True)',
        set_at=(("pytorch/core/module.py", ("log", "log_dict")),),
    ),
    FrameworkEntry(
        name="tqdm_tensor_postfix",
        framework="tqdm",
        title="A tqdm progress bar formats a tensor (set_postfix / set_description) every step",
        frames=(
            (
                "tqdm/std.py",
                (
                    "set_postfix",
                    "set_postfix_str",
                    "set_description",
                    "set_description_str",
                    "format_meter",
                    "__str__",
                    "display",
                    "refresh",
                ),
            ),
        ),
        fix="Give the progress bar Python numbers, and only every N steps: a tensor in set_postfix is "
        "formatted on the host, which waits for the GPU.",
        code="if step % 50 == 0:\n    pbar.set_postfix(loss=loss.item())   # one read per 50 steps",
    ),
    FrameworkEntry(
        name="accelerate_gather_each_step",
        framework="accelerate",
        title="accelerate gathers a value from every process each training step (accelerator.gather / "
        "gather_for_metrics in the loop)",
        frames=(
            ("accelerate/accelerator.py", ("gather", "gather_for_metrics", "reduce")),
            ("accelerate/utils/operations.py", ("gather", "gather_object", "reduce")),
        ),
        fix="Gather once per logging interval or epoch, not every step: keep a running sum on the device and "
        "gather that. Each gather is an all-gather that every rank waits for, and reading its result waits "
        "for the GPU.",
        code="running += loss.detach()   # no sync\n"
        "if step % log_every == 0:\n"
        "    gathered = accelerator.gather_for_metrics(running)   # one all-gather per interval\n"
        "    print(gathered.mean().item() / log_every)\n"
        "    running.zero_()",
    ),
    FrameworkEntry(
        name="hf_eval_in_loop",
        framework="transformers",
        title='Hugging Face Trainer runs evaluation inside the training loop (eval_strategy="steps")',
        frames=(("transformers/trainer.py", ("evaluate", "evaluation_loop", "prediction_step")),),
        fix='Evaluate less often: eval_strategy="epoch" or a larger eval_steps; each evaluation stops training '
        "and reads its results on the host.",
        code='args = TrainingArguments(..., eval_strategy="epoch")   # or eval_steps=2000',
    ),
)


@dataclass(frozen=True)
class FrameworkSetting:
    """A generic cause's fix phrased as the setting of the framework that runs the loop. `code` may hold
    {workers}: the worker count of the generic finding's own code."""

    framework: str
    cause: str
    fix: str
    code: str
    replay: str = ""  # the replay fix (analysis ALL_FIXES) it makes, where not the cause's own


# Which framework runs the loop: a python_function frame from one of its files (most specific first: the HF
# Trainer runs on accelerate, so transformers is tried before accelerate).
RUNNERS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("transformers", "the Hugging Face Trainer", ("transformers/trainer.py(",)),
    (
        "lightning",
        "the Lightning Trainer",
        ("lightning/pytorch/loops/", "lightning/pytorch/trainer/trainer.py(", "pytorch_lightning/loops/"),
    ),
    ("accelerate", "accelerate", ("accelerate/accelerator.py(",)),
)

SETTINGS: tuple[FrameworkSetting, ...] = (
    FrameworkSetting(
        "transformers",
        "launch_bound",
        "Let the Trainer compile the model: torch_compile=True fuses ops into fewer kernels, and "
        'torch_compile_mode="reduce-overhead" also replays each step\'s kernels as CUDA graphs (one launch '
        "each). The first steps compile.",
        'args = TrainingArguments(..., torch_compile=True, torch_compile_mode="reduce-overhead")',
    ),
    FrameworkSetting(
        "transformers",
        "data_loading",
        "The Trainer builds the DataLoader: give it workers, pinned memory and workers kept between epochs "
        "through TrainingArguments.",
        "args = TrainingArguments(..., dataloader_num_workers={workers}, dataloader_pin_memory=True,\n"
        "                         dataloader_persistent_workers=True, dataloader_prefetch_factor=4)",
    ),
    FrameworkSetting(
        "transformers",
        "fp32_math",
        "Let the Trainer run the matmuls on tensor cores: bf16=True (autocast, fp32 master weights), or "
        "tf32=True to keep fp32 tensors with TF32 matmuls.",
        "args = TrainingArguments(..., bf16=True)   # or tf32=True",
    ),
    FrameworkSetting(
        "lightning",
        "launch_bound",
        "Compile the LightningModule before fit: fused ops, fewer kernels to launch. Lightning compiles its "
        "forward only, so training_step must run the model through self(...), not its layers directly.",
        "model = torch.compile(model)   # the LightningModule\ntrainer.fit(model, datamodule=dm)\n"
        "# in training_step: out = self(x)   (self.body(x) directly would not run compiled)",
        replay="compile",  # default mode: kernels still launched one by one, not CUDA graphs
    ),
    FrameworkSetting(
        "lightning",
        "data_loading",
        "The loader is yours (the one given to trainer.fit(), or returned by train_dataloader() or a "
        "DataModule): give it workers, pinned memory and workers kept between epochs (Lightning moves batches "
        "to the GPU for you).",
        "loader = DataLoader(train_set, batch_size=..., num_workers={workers}, pin_memory=True,\n"
        "                    persistent_workers=True, prefetch_factor=4)\n"
        "trainer.fit(model, loader)   # or return it from train_dataloader()",
    ),
    FrameworkSetting(
        "lightning",
        "fp32_math",
        'Let the Trainer run the matmuls on tensor cores: precision="bf16-mixed" (fp32 master weights).',
        'trainer = L.Trainer(..., precision="bf16-mixed")',
    ),
    FrameworkSetting(
        "accelerate",
        "fp32_math",
        'Let accelerate run the forward under autocast: Accelerator(mixed_precision="bf16").',
        'accelerator = Accelerator(mixed_precision="bf16")',
    ),
)
