"""idlehound.profile(): the same capture as `idlehound run`, for a block of code."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Literal, Optional, Union

from ..vocabulary import StepOn
from ._options import CaptureOptions
from ._session import Session
from ._signals import EXIT_SIGTERM, Terminated
from ._watch import WatchOptions


class profile:  # noqa: N801 - used like torch.profiler.profile
    """Profile a training loop::

        with idlehound.profile() as p:      # steps found from optimizer.step(); nothing else to do
            for x, y in loader: ...

        with idlehound.profile(skip=5, active=3) as p:
            for x, y in loader:
                ...
                p.step()                    # or mark steps yourself

    On exit the trace, sidecar and run.json are in `p.run_dir`, and `p.result` holds the analysis.

    Capture sits below analysis and reporting: what happens after the capture is `on_finish(run_dir,
    print_report)`, whose return value becomes `p.result`. `idlehound.profile` (idlehound.app.profile) passes
    the application's analyse-and-report step; without one, only the run folder is written.
    """

    def __init__(
        self,
        logdir: Union[str, Path] = CaptureOptions.logdir,
        run_name: Optional[str] = None,
        skip: int = CaptureOptions.skip,
        warmup: int = CaptureOptions.warmup,
        active: int = CaptureOptions.active,
        step_on: StepOn = CaptureOptions.step_on,
        with_stack: bool = CaptureOptions.with_stack,
        record_shapes: bool = CaptureOptions.record_shapes,
        profile_memory: bool = CaptureOptions.profile_memory,
        analyze: bool = True,
        print_report: bool = True,
        progress: bool = CaptureOptions.progress,
        sample_hz: float = CaptureOptions.sample_hz,
        on_finish: Optional[Callable[[Path, bool], Any]] = None,
        watch: Optional[WatchOptions] = None,
    ) -> None:
        self.opts = CaptureOptions(
            logdir=Path(logdir),
            run_name=run_name,
            skip=skip,
            warmup=warmup,
            active=active,
            step_on=step_on,
            with_stack=with_stack,
            record_shapes=record_shapes,
            profile_memory=profile_memory,
            progress=progress,
            sample_hz=sample_hz,
            watch=watch,  # later windows: `idlehound capture RUN`, a slowdown (capture/_watch.py)
        )
        self.analyze = analyze
        self.print_report = print_report
        self.on_finish = on_finish
        self.session: Optional[Session] = None
        self.result: Any = None
        self.run_dir: Optional[Path] = None

    def __enter__(self) -> profile:
        import sys

        self.session = Session(self.opts, self.opts.run_name or "profile", list(sys.argv)).start()
        self.run_dir = self.session.run_dir
        return self

    def step(self) -> None:
        """Mark the end of a training step (turns off automatic stepping)."""
        assert self.session is not None, "use inside `with idlehound.profile()`"
        self.session.manual = True
        self.session.step()

    def __exit__(
        self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException], tb: object
    ) -> Literal[False]:
        assert self.session is not None
        code = (
            0
            if exc_type is None
            else 130
            if issubclass(exc_type, KeyboardInterrupt)
            else EXIT_SIGTERM
            if issubclass(exc_type, Terminated)
            else 1
        )
        self.session.stop(code, f"{exc_type.__name__}: {exc}" if exc_type else None)
        if code == EXIT_SIGTERM:  # a scheduler's grace period is short: the analysis is left for later
            if self.session.traces:
                sys.stderr.write(
                    f"idlehound: terminated (SIGTERM): trace saved, not analysed: idlehound analyze "
                    f"{self.session.run_dir}\n"
                )
            raise SystemExit(EXIT_SIGTERM) from None  # SIGTERM inside the block: end as the signal would
        if self.analyze and self.session.traces and self.on_finish is not None:
            self.result = self.on_finish(self.session.run_dir, self.print_report)
        return False
