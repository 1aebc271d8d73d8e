"""The one adapter every integration uses: idlehound.profile driven step by step by the framework."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable, Optional, Union

from ..app import profile
from ..capture import CaptureOptions

LogFn = Callable[[dict[str, float], int], None]

# The figures a framework's logger gets: the headline, not every breakdown share (those are in the run folder).
HEADLINE = (
    "gpu_util",
    "step_ms",
    "gpu_idle_ms",
    "dataloader_pct",
    "kernel_pct",
    "sync_per_step",
    "sm_efficiency",
)


class Window:
    """Profile steps [skip + warmup, skip + warmup + active) of a run, then analyse once.

    The framework calls step() at the end of every training step and close() when training ends; the window
    closes itself as soon as its last step is recorded, so the rest of training runs unprofiled.
    """

    def __init__(
        self,
        logdir: Union[str, Path] = "log",
        run_name: Optional[str] = None,
        skip: int = CaptureOptions.skip,
        warmup: int = CaptureOptions.warmup,
        active: int = CaptureOptions.active,
        print_report: bool = True,
        on_close: Optional[Callable[[Window], None]] = None,
        **profile_kwargs: Any,
    ) -> None:
        self.on_close = on_close  # called once the analysis is ready
        self.profile = profile(
            logdir=logdir,
            run_name=run_name,
            skip=skip,
            warmup=warmup,
            active=active,
            step_on="manual",
            print_report=print_report,
            **profile_kwargs,
        )
        self.started = False
        self.closed = False
        self.deferred_to: Optional[str] = None  # why this window stood aside for a profiler already running
        self._host_dir: Optional[Path] = None

    @property
    def run_dir(self) -> Optional[Path]:
        return self._host_dir if self.deferred_to is not None else self.profile.run_dir

    @property
    def result(self) -> Any:
        return self.profile.result

    def start(self) -> None:
        if self.started or self.deferred_to is not None:
            return
        from ..capture import active_session

        self.deferred_to = _running_profiler()
        self._host_dir = getattr(active_session(), "run_dir", None)  # the window that stays
        if (
            self.deferred_to is not None
        ):  # two profilers would each distort the other's trace: keep one window
            print(
                f"idlehound: {self.deferred_to} already profiles this process: this callback "
                "starts no second profiler and that window stays the only one",
                file=sys.stderr,
                flush=True,
            )
            return
        self.profile.__enter__()
        self.started = True

    def step(self) -> bool:
        """Mark one step done; True when this step closed the window (the analysis is ready)."""
        if not self.started or self.closed:
            return False
        self.profile.step()
        session = self.profile.session
        watching = session is not None and session.watcher is not None and session.watcher.watching
        if session is not None and session.step_num >= session.window_end and not watching:
            self.close()
            return True
        return False

    def close(self, error: Optional[BaseException] = None) -> None:
        """Stop profiling and analyse what was captured (a partial window too); safe to call twice."""
        if not self.started or self.closed:
            return
        self.closed = True
        exc_type = type(error) if error is not None else None
        self.profile.__exit__(exc_type, error, None)
        if self.on_close is not None:
            self.on_close(self)

    def headline(self) -> dict[str, float]:
        return headline(self.result)


class WindowCallback:
    """What a framework's callback shares: its window, made from the same options, and what the window found.

    A subclass sets `framework`, the run name when none is given, and calls `window.start()`, `window.step()`
    and `end_training()` from its framework's hooks. The options after run_name are Window's (skip, warmup,
    active, print_report, then idlehound.profile's keywords), in its order.
    """

    framework = "profile"

    def __init__(
        self,
        logdir: Union[str, Path] = "log",
        run_name: Optional[str] = None,
        *window_args: Any,
        **window_options: Any,
    ) -> None:
        super().__init__()
        name = self.framework if run_name is None else run_name
        self.window = Window(logdir, name, *window_args, **window_options)

    @property
    def run_dir(self) -> Optional[Path]:
        return self.window.run_dir

    @property
    def result(self) -> Any:
        return self.window.result

    def end_training(self) -> bool:
        """Close a window that training ended inside (what was captured is analysed); True when it did."""
        if self.window.started and not self.window.closed:
            self.window.close()
            return True
        return False


def _running_profiler() -> Optional[str]:
    """Who profiles this process already: an idlehound capture (`idlehound run`, another callback) or a
    torch.profiler started elsewhere; None when nobody does."""
    from ..capture import active_session

    host = active_session()
    if host is not None:
        return f"idlehound ({host.run_dir})"
    try:
        import torch

        if torch._C._autograd._profiler_enabled() or torch.autograd.profiler._is_profiler_enabled:
            return "a torch.profiler"
    except Exception:  # an older torch without the flag: nothing to detect
        pass
    return None


def headline(result: Any) -> dict[str, float]:
    """idlehound/<metric> -> value for the headline metrics of an analysis (empty when there is none)."""
    doc = getattr(result, "doc", None)
    if not doc:
        return {}
    out = {}
    for key, m in doc.get("metrics", {}).items():
        if key in HEADLINE and isinstance(m.get("value"), (int, float)):
            out[f"idlehound/{key}"] = float(m["value"])
    out["idlehound/findings"] = float(len(doc.get("findings", [])))
    return out


@contextlib.contextmanager
def profile_steps(
    logdir: Union[str, Path] = "log",
    run_name: Optional[str] = None,
    skip: int = CaptureOptions.skip,
    warmup: int = CaptureOptions.warmup,
    active: int = CaptureOptions.active,
    log: Optional[LogFn] = None,
    **profile_kwargs: Any,
) -> Iterator[Window]:
    """Profile a window of a hand-written (e.g. accelerate) loop; call `.step()` after each optimizer step::

        with profile_steps(skip=10, active=5, log=accelerator.log) as prof:
            for batch in loader:
                ...
                optimizer.step()
                prof.step()

    `log(values, step)` receives the headline figures when the window closes, at its last step (accelerate's
    `Accelerator.log(values, step=...)` takes this form; so does a SummaryWriter wrapper).
    """
    w = Window(logdir, run_name, skip, warmup, active, on_close=_logger(log), **profile_kwargs)
    w.start()
    try:
        yield w
    except BaseException as e:
        w.close(e)
        raise
    w.close()


def _logger(log: Optional[LogFn]) -> Optional[Callable[[Window], None]]:
    if log is None:
        return None

    def on_close(w: Window) -> None:
        figures = w.headline()
        if figures:
            log(figures, w.profile.session.step_num if w.profile.session else 0)

    return on_close
