"""Lightning: `Trainer(callbacks=[IdlehoundCallback()])` profiles a window of training steps.

Works with `lightning` (lightning.pytorch) or the older `pytorch_lightning` package.
"""

from __future__ import annotations

from typing import Any

from ._window import WindowCallback


def _callback_base() -> type:
    try:
        from lightning.pytorch import Callback
    except ImportError:
        try:
            from pytorch_lightning import Callback
        except ImportError:
            raise ImportError(
                "idlehound.integrations.lightning needs Lightning: pip install lightning"
            ) from None
    base: type = Callback  # untyped (lightning is not type-checked here)
    return base


class IdlehoundCallback(WindowCallback, _callback_base()):  # type: ignore[misc]  # base chosen at import (lightning or pytorch_lightning)
    """Profile training batches [skip + warmup, skip + warmup + active), print the analysis, and log the
    headline figures to `trainer.logger` (TensorBoard, CSV, W&B...) when one is configured."""

    framework = "lightning"  # the run name when none is given

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self.window.start()

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self.window.step():
            self._log(trainer)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if self.end_training():
            self._log(trainer)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.window.close(exception)

    def _log(self, trainer: Any) -> None:
        figures = self.window.headline()
        for lg in getattr(trainer, "loggers", None) or []:
            lg.log_metrics(figures, step=trainer.global_step)
