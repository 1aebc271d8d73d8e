"""Lightning: the Trainer's own idle sources and settings."""

from __future__ import annotations

from ...vocabulary import Cause, FixVariant
from ._table import Framework, FrameworkEntry, FrameworkSetting

NAME = "lightning"
SELF_LOG = (("pytorch/core/module.py", ("log", "log_dict")),)  # the user's self.log(...) call

STEP_LOG = FrameworkEntry(
    name="lightning_step_log",
    framework=NAME,
    title="Lightning converts per-step logged tensors (self.log on_step / prog_bar) to Python numbers "
    "every batch",
    frames=(
        (
            "trainer/connectors/logger_connector/logger_connector.py",
            ("metrics", "progress_bar_metrics", "on_batch_end", "update_train_step_metrics"),
        ),
    ),
    order=20,
    fix="Log tensors per epoch, not per step: self.log(..., on_step=False, on_epoch=True) keeps the running "
    "value on the device and reads it once per epoch; log a per-step value only every N steps.",
    code='self.log("train_loss", loss, prog_bar=True, on_step=False, on_epoch=True)',
    set_at=SELF_LOG,
)

SYNC_DIST = FrameworkEntry(
    name="lightning_sync_dist",
    framework=NAME,
    title="Lightning synchronises a logged value across processes every step (self.log(..., sync_dist=True) "
    "with on_step)",
    frames=(("fabric/utilities/distributed.py", ("_sync_ddp", "_sync_ddp_if_available")),),
    order=30,
    fix="Reduce logged values across processes once per epoch: self.log(..., on_step=False, on_epoch=True, "
    "sync_dist=True). Each per-step sync_dist is a barrier and an all-reduce that every rank waits for.",
    code='self.log("train_loss", loss, on_step=False, on_epoch=True, sync_dist=True)',
    set_at=SELF_LOG,
)

_LOADER = (
    "DataLoader(train_set, batch_size=..., num_workers={workers}, pin_memory=True,\n"
    "{pad}persistent_workers=True, prefetch_factor=4)"
)
_GIVE = "give it workers, pinned memory and workers kept between epochs (Lightning moves batches to the GPU for you)."
# The data-loading fix by how the `.fit(...)` line (the finding's line) hands the loader over.
LOADER_BY_FIT_CALL = (
    (
        r"\bdatamodule\s*=",
        "The loader is the one your DataModule's train_dataloader() returns: " + _GIVE,
        "def train_dataloader(self):   # in your LightningDataModule\n"
        "    return " + _LOADER.replace("{pad}", " " * 22),
    ),
    (
        r"\btrain_dataloaders\s*=",
        "The loader is the one given to trainer.fit(train_dataloaders=...): " + _GIVE,
        "loader = " + _LOADER.replace("{pad}", " " * 20) + "\ntrainer.fit(model, train_dataloaders=loader)",
    ),
    (
        r"\.fit\([^,]*\)\s*(#.*)?$",  # the model alone: the loader comes from its own hook
        "The loader is the one your LightningModule's train_dataloader() returns: " + _GIVE,
        "def train_dataloader(self):   # in your LightningModule\n"
        "    return " + _LOADER.replace("{pad}", " " * 22),
    ),
)

SETTINGS = (
    FrameworkSetting(
        NAME,
        Cause.LAUNCH_BOUND,
        "Compile the LightningModule before fit: fused ops, fewer kernels to launch. Lightning compiles its "
        "forward only, so training_step must run the model through self(...), not its layers directly.",
        "model = torch.compile(model)   # the LightningModule\ntrainer.fit(model, datamodule=dm)\n"
        "# in training_step: out = self(x)   (self.body(x) directly would not run compiled)",
        replay=FixVariant.COMPILE,  # default mode: kernels still launched one by one, not CUDA graphs
    ),
    FrameworkSetting(
        NAME,
        Cause.DATA_LOADING,
        "The loader is yours (the one given to trainer.fit(), or returned by train_dataloader() or a "
        "DataModule): give it workers, pinned memory and workers kept between epochs (Lightning moves batches "
        "to the GPU for you).",
        "loader = DataLoader(train_set, batch_size=..., num_workers={workers}, pin_memory=True,\n"
        "                    persistent_workers=True, prefetch_factor=4)\n"
        "trainer.fit(model, loader)   # or return it from train_dataloader()",
        by_line=LOADER_BY_FIT_CALL,
    ),
    FrameworkSetting(
        NAME,
        Cause.FP32_MATH,
        'Let the Trainer run the matmuls on tensor cores: precision="bf16-mixed" (fp32 master weights).',
        'trainer = L.Trainer(..., precision="bf16-mixed")',
    ),
)

FRAMEWORK = Framework(
    name=NAME,
    words="the Lightning Trainer",
    runner_files=(
        "lightning/pytorch/loops/",
        "lightning/pytorch/trainer/trainer.py(",
        "pytorch_lightning/loops/",
    ),
    entries=(STEP_LOG, SYNC_DIST),
    settings=SETTINGS,
    tune_changes=("pl_args", "pl_log_epoch"),
    tune_candidates=("pl_bf16", "pl_benchmark", "pl_log_epoch", "pl_compile"),
    callback="idlehound.integrations.lightning:IdlehoundCallback",
    docs="docs/frameworks/lightning.md",
)
