"""Hugging Face: `Trainer(..., callbacks=[IdlehoundCallback()])` profiles a window of optimizer steps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._window import WindowCallback

try:
    from transformers import TrainerCallback
except ImportError:
    raise ImportError(
        "idlehound.integrations.transformers needs transformers: pip install transformers"
    ) from None


class IdlehoundCallback(WindowCallback, TrainerCallback):  # type: ignore[misc]  # transformers is untyped here (pyproject ignores its imports)
    """Profile optimizer steps [skip + warmup, skip + warmup + active), print the analysis, and put the
    headline figures into the Trainer's log history and, when `report_to` includes tensorboard, into
    TensorBoard scalars (see tensorboard_dir)."""

    framework = "transformers"  # the run name when none is given

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.window.start()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.window.step():
            self._log(args, state)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.end_training():
            self._log(args, state)

    def _log(self, args: Any, state: Any) -> None:
        figures = self.window.headline()
        if not figures:
            return
        state.log_history.append({**figures, "step": state.global_step})
        if _reports_to_tensorboard(args):
            from ..report import write_scalars

            write_scalars(tensorboard_dir(args), figures, step=state.global_step)


def tensorboard_dir(args: Any) -> Path:
    """Where HF's TensorBoardCallback logs: TENSORBOARD_LOGGING_DIR, `logging_dir` (transformers 4), else a run
    `idlehound` beside its default runs under output_dir/runs."""
    import os

    env = os.environ.get("TENSORBOARD_LOGGING_DIR")
    if env:
        return Path(env).expanduser()
    if getattr(args, "logging_dir", None):
        return Path(args.logging_dir)
    return Path(args.output_dir) / "runs" / "idlehound"


def _reports_to_tensorboard(args: Any) -> bool:
    report_to = getattr(args, "report_to", None) or []
    return "tensorboard" in ([report_to] if isinstance(report_to, str) else report_to) or report_to == "all"
