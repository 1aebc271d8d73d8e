"""Lightning: `Trainer(callbacks=[IdlehoundCallback()])` profiles a window of training steps.

Works with `lightning` (lightning.pytorch) or the older `pytorch_lightning` package.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Union

from ._window import Window


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
    return Callback


class IdlehoundCallback(_callback_base()):  # type: ignore[misc]  # base chosen at import (lightning or pytorch_lightning)
    """Profile training batches [skip + warmup, skip + warmup + active), print the analysis, and log the
    headline figures to `trainer.logger` (TensorBoard, CSV, W&B...) when one is configured."""

    def __init__(
        self,
        logdir: Union[str, Path] = "log",
        run_name: Optional[str] = "lightning",
        skip: int = 10,
        warmup: int = 2,
        active: int = 5,
        print_report: bool = True,
        **profile_kwargs: Any,
    ) -> None:
        super().__init__()
        self.window = Window(
            logdir, run_name, skip, warmup, active, print_report=print_report, **profile_kwargs
        )

    @property
    def run_dir(self) -> Optional[Path]:
        return self.window.run_dir

    @property
    def result(self) -> Any:
        return self.window.result

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self.window.start()

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if self.window.step():
            self._log(trainer)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if self.window.started and not self.window.closed:  # training ended inside the window
            self.window.close()
            self._log(trainer)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.window.close(exception)

    def _log(self, trainer: Any) -> None:
        figures = self.window.headline()
        for lg in getattr(trainer, "loggers", None) or []:
            lg.log_metrics(figures, step=trainer.global_step)
