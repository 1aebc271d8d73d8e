"""A capture session: the profiler's window over the run's steps, from its start to its end.

Its other jobs each have a module: the options (_options), Ctrl-C and SIGTERM while a profiler call runs
(_signals.SignalGate), what ends a step and the step times (_stepping), and the run folder's files (_runinfo).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

from .. import sampler as _sampler
from ..errors import CaptureError
from ..runfolder import SAMPLES, write_run_file
from ..vocabulary import ProfilerAction
from ._budget import Watchdog
from ._dataloader import record_dataloaders
from ._options import CaptureOptions
from ._quiet import kineto_quiet
from ._runinfo import (
    distributed_rank,
    ended_by,
    export_window,
    session_dir,
    this_worker,
    torch_flags,
    write_run_json,
)
from ._signals import SignalGate
from ._stepping import RECORDED, count_child_processes, step_hook, step_timing
from ._watch import Watcher

MAX_TIMED_AFTER_WINDOW = 500  # steps timed after the window (CUDA events and host clock): enough for the
# means, bounded for long jobs (run.json and memory would otherwise grow with every step)


class StopRun(SystemExit):
    """Raised from a step hook when --stop-after ends the script after the window."""


_ACTIVE: list[Session] = []  # sessions started in this process and not yet stopped (one profiler at a time)


def active_session() -> Optional[Session]:
    """The capture session already running in this process (`idlehound run`, a callback), or None."""
    return _ACTIVE[-1] if _ACTIVE else None


class Session:
    def __init__(self, opts: CaptureOptions, label: str, command: list[str]) -> None:
        try:
            import torch  # noqa: F401
        except ImportError:
            raise CaptureError(
                "capture needs PyTorch: pip install torch torchvision (README, Install: the CPU-only wheels on a machine without a GPU)"
            ) from None
        self.opts = opts
        self.rank = distributed_rank()
        self.run_dir = session_dir(opts, label, self.rank)
        self.command = command
        self._cwd = os.getcwd()  # where relative frame file names are found, should the script chdir
        self.worker = this_worker()
        self.traces: list[str] = []
        self.loaders: list[dict[str, Any]] = []
        self.step_num = 0
        # the host clock of each step, for as many steps as CUDA events are kept
        self.step_times: list[tuple[float, ProfilerAction]] = []
        self._recorded = 0  # steps the profiler recorded (also past the timed steps: --watch's later windows)
        self.window: list[float] = []
        self.manual = opts.step_on == "manual"
        self._undo: list[Callable[[], None]] = []
        self._prof: Any = None  # torch.profiler.profile while the window is open
        self._first_opt: Optional[int] = None
        self._t_start = time.monotonic()
        self._wall0 = time.time()
        self.flags: dict[str, Any] = {}
        self.sampler: Optional[_sampler.Sampler] = None
        import torch

        self._torch = torch
        self._cuda = torch.cuda.is_available()
        self.gpu_marks: list[tuple[Any, ProfilerAction]] = []
        self._timing: Optional[dict[str, Any]] = None
        self._stopped = False
        self._profiled = False  # the profiler ran once already (one window per run)
        self._gate = SignalGate(self._cut_window, self._say, lambda: self._stopped)
        self._hurry = False  # saving after SIGTERM: write the trace as recorded, leave the rest for later
        self._watchdog: Optional[Watchdog] = None
        self._cut_reason: Optional[str] = None  # a budget the window passed ("time", "memory")
        self._cut_step: Optional[int] = None  # the step during which the window was cut
        self._cut_at_step = False  # the watchdog could not signal: cut at the next step end
        self._t_window = time.monotonic()
        self.window_info: dict[str, Any] = {"cut_by": "not reached"}
        self.trace_dir = self.run_dir  # where the open window's trace goes (a later window: windows/step<N>)
        self.later_window = False  # the open window is one of --watch's, not the run's first
        self.watcher: Optional[Watcher] = None
        self.facts: dict[str, int] = {"optimizer_steps": 0, "child_processes": 0}  # why no step, if none

    # ---- lifecycle
    def start(self) -> Session:
        import torch
        from torch.profiler import ProfilerActivity, profile, schedule

        o = self.opts
        _teardown_cupti_after(torch)
        self._schedule = schedule(skip_first=o.skip, wait=0, warmup=o.warmup, active=o.active, repeat=1)
        acts = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            acts.append(ProfilerActivity.CUDA)
        self._gate.install()  # Ctrl-C and SIGTERM: held while a profiler call runs, then handled as before
        self._undo.append(record_dataloaders(self.loaders))
        self._undo.append(count_child_processes(self.facts))
        stepper = step_hook(o.step_on, self.step, self._on_optimizer_step)
        if stepper is not None:
            self._undo.append(stepper)
        self.watcher = Watcher(self, o.watch).start()  # the step clock, and --watch
        self.sampler = _sampler.Sampler(hz=o.sample_hz).start() if o.sample_hz > 0 else None
        self._make_profiler: Callable[[], Any] = lambda: profile(
            activities=acts,
            schedule=self._schedule,
            on_trace_ready=lambda prof: export_window(self, prof),
            with_stack=o.with_stack,
            record_shapes=o.record_shapes,
            profile_memory=o.profile_memory,
        )
        self._maybe_start_profiler()
        write_run_json(self, "running")
        _ACTIVE.append(self)
        return self

    def _maybe_start_profiler(self) -> None:
        """Start the profiler only when the window's warm-up begins, so the skipped steps pay nothing for it.

        It keeps the run's own step numbers: ProfilerStep#N in the trace is the N-th step of the run.
        """
        if self._prof is not None or self._profiled or self.step_num < self.opts.skip:
            return
        with self._gate.held():
            try:
                with kineto_quiet():
                    self._profiled = True
                    prof = self._make_profiler()
                    prof.step_num = self.step_num
                    prof.current_action = self._schedule(self.step_num)
                    prof.start()
            except Exception as e:  # the user's training goes on; only the window is lost
                self._profiler_failed("start", e)
                return
            self._prof = prof
            self._t_window = time.monotonic()
            o = self.opts
            if o.max_window_seconds > 0 or o.max_window_mb > 0:
                self._watchdog = Watchdog(o.max_window_seconds, o.max_window_mb, self._request_cut).start()

    def step(self) -> None:
        """One training step ended."""
        now = time.monotonic()
        action = self._action(self.step_num)
        if action in RECORDED:
            self._recorded += 1
        timed = self.step_num < self.window_end + MAX_TIMED_AFTER_WINDOW  # bounded for jobs of days
        if timed:
            self.step_times.append((now, action))
        if self._cuda and timed:
            ev = self._torch.cuda.Event(enable_timing=True)
            ev.record()  # asynchronous: times the GPU's pace without a sync
            self.gpu_marks.append((ev, action))
        if action in RECORDED and not self.window:
            self.window.append(self.step_times[-2][0] - self._t_start if len(self.step_times) > 1 else 0.0)
        if action == ProfilerAction.RECORD_AND_SAVE:
            self.window.append(now - self._t_start)
            self.flags = torch_flags()
        self.step_num += 1
        self._progress()
        if self._prof is not None:
            if self.step_num >= self.window_end:
                self._save_window("steps")
            else:
                try:
                    with (
                        self._gate.held(),
                        kineto_quiet(),
                    ):  # a Ctrl-C inside the profiler's bookkeeping: half-stepped
                        self._prof.step()
                except (
                    Exception
                ) as e:  # raised inside the user's optimizer.step(): never let it stop training
                    self._profiler_failed("step", e)
                if self._cut_at_step:  # a budget passed; the script's own SIGINT handler bars the signal
                    self._cut_window()
        else:
            self._maybe_start_profiler()
        if self.watcher is not None:
            self.watcher.on_step(now)
        if self.opts.stop_after and self.step_num >= self.window_end:
            raise StopRun(0)

    def _save_window(self, cut_by: str, reraise: bool = True) -> Optional[str]:
        """Stop the profiler, which writes the trace, saying so; the rest of the run pays nothing for it.

        Returns the error when stopping failed (the run goes on either way)."""
        if self._watchdog is not None:
            self._watchdog.stop()
        steps = self._recorded_steps()
        self.window_info = {
            "cut_by": cut_by,
            "steps_recorded": steps,
            "seconds": round(time.monotonic() - self._t_window, 3),
            "memory_growth_mb": round(self._watchdog.peak_growth_mb, 1) if self._watchdog else None,
            "max_window_seconds": self.opts.max_window_seconds,
            "max_window_mb": self.opts.max_window_mb,
        }
        # a scheduler's grace period (Slurm's KillWait: 30 s) is short: the trace is written as it is recorded
        # (no gzip, no sidecar of exact lines) and the analysis waits for `idlehound analyze`
        self._hurry = cut_by == "SIGTERM"
        if self._hurry:
            self.window_info["fast_save"] = "SIGTERM: trace not compressed, no exact-lines sidecar"
        self._say(f"saving the profiled window ({steps} step(s) recorded, ended by {cut_by})...")
        t0, error = time.monotonic(), None
        try:
            with self._gate.held(reraise), kineto_quiet():
                self._prof.stop()
        except Exception as e:  # keep the run going and its exit code; report the profiler's failure
            error = f"profiler stop failed: {e}"
            sys.stderr.write(f"idlehound: {error}\n")
        finally:
            self._prof = None
        size = sum((self.run_dir / t).stat().st_size for t in self.traces if (self.run_dir / t).exists())
        self.window_info["save_seconds"] = round(time.monotonic() - t0, 3)
        self._say(
            f"saved {len(self.traces)} trace file(s), {size / 2**20:.1f} MB, in "
            f"{self.window_info['save_seconds']:.1f} s"
            if self.traces
            else "no trace: the window ended before the profiler's warm-up was over"
        )
        return error

    def _profiler_failed(self, when: str, e: Exception) -> None:
        sys.stderr.write(
            f"idlehound: the profiler failed to {when} at step {self.step_num} ({type(e).__name__}: "
            f"{e}); the script runs on unprofiled\n"
        )
        if self._watchdog is not None:
            self._watchdog.stop()
        self._prof = None
        self.window_info = {
            "cut_by": "profiler error",
            "error": f"{type(e).__name__}: {e}",
            "steps_recorded": self._recorded_steps(),
        }

    def _recorded_steps(self) -> int:
        return self._recorded

    def _say(self, msg: str) -> None:
        if self.opts.progress:
            sys.stderr.write(("\n" if _isatty() else "") + f"idlehound: {msg}\n")
            sys.stderr.flush()

    def _request_cut(self, reason: str) -> None:
        """From the watchdog thread: have the main thread cut the window (a simulated Ctrl-C it recognises)."""
        self._cut_reason = reason
        if not self._gate.interrupt_main():
            self._cut_at_step = True

    def _cut_window(self) -> None:
        if self._prof is None:
            return
        o = self.opts
        budget = f"{o.max_window_seconds:g} s" if self._cut_reason == "time" else f"{o.max_window_mb:g} MB"
        self._say(
            f"the profiled window passed its {self._cut_reason} budget ({budget}) during step "
            f"{self.step_num}; cutting it there (raise --max-window-seconds / --max-window-mb to record more)"
        )
        self._cut_step = self.step_num
        if len(self.window) == 1:
            self.window.append(time.monotonic() - self._t_start)
        self._save_window(f"{self._cut_reason} budget")

    @property
    def window_end(self) -> int:
        return self.opts.skip + self.opts.warmup + self.opts.active

    def stop(self, exit_code: Optional[int], error: Optional[str] = None) -> Path:
        """Flush what was captured (a partial window too), write run.json; safe to call once."""
        with self._gate.held(
            reraise=False
        ):  # a second Ctrl-C must not cut the flush short or leave "running"
            for undo in reversed(self._undo):
                undo()
            self._undo.clear()
            self._stopped = True
            if self in _ACTIVE:
                _ACTIVE.remove(self)
            if not self.flags:
                self.flags = torch_flags()
            if self._prof is not None:
                failed = self._save_window(ended_by(exit_code, error), reraise=False)
                error = error or failed
            if self.watcher is not None:
                self.watcher.close(ended_by(exit_code, error))
            if self.opts.progress:
                sys.stderr.write("\n" if _isatty() else "")
            samples = self.sampler.stop() if self.sampler else {"source": "none", "samples": []}
            write_run_file(self.run_dir, self.rank, SAMPLES, samples)
            write_run_json(self, "done", exit_code, error, samples)
        self._gate.restore()
        return self.run_dir

    # ---- stepping
    def _on_optimizer_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.facts["optimizer_steps"] += 1
        if self.manual:
            return
        if self._first_opt is None:
            self._first_opt = id(optimizer)
        if id(optimizer) == self._first_opt:  # several optimizers per iteration: one step
            self.step()

    def _action(self, n: int) -> ProfilerAction:
        if (
            self._cut_step is not None and n >= self._cut_step
        ):  # after a cut: partly recorded, then not at all
            return ProfilerAction.CUT if n == self._cut_step else ProfilerAction.NONE
        action = ProfilerAction(self._schedule(n).name)
        return ProfilerAction.LATER_WINDOW if self.later_window and action != ProfilerAction.NONE else action

    def reopen(self, skip: int, warmup: int, active: int, trace_dir: Path) -> None:
        """Record a later window, steps [skip + warmup, skip + warmup + active), into trace_dir (--watch)."""
        from torch.profiler import schedule

        if self._prof is not None:
            return
        self.opts.skip, self.opts.warmup, self.opts.active = skip, warmup, active
        self._schedule = schedule(skip_first=skip, wait=0, warmup=warmup, active=active, repeat=1)
        self._profiled, self._cut_step, self._cut_reason = False, None, None
        self.window = []
        self.trace_dir, self.later_window = trace_dir, True
        self._maybe_start_profiler()

    # ---- output
    def _progress(self) -> None:
        if not self.opts.progress:
            return
        o, n = self.opts, self.step_num
        start = o.skip + o.warmup
        if self._cut_step is not None:
            msg = f"idlehound: window cut by its {self._cut_reason} budget; running on unprofiled, step {n}"
        elif n <= start:
            msg = f"idlehound: warming up, step {n}/{start} before the profiled window"
        elif n <= self.window_end:
            msg = f"idlehound: profiling step {n - start}/{o.active}"
        else:
            msg = f"idlehound: window captured ({o.active} steps); running on unprofiled, step {n}"
        if _isatty():
            sys.stderr.write("\r" + msg.ljust(78))
            sys.stderr.flush()
        elif n in (1, start, start + 1, self.window_end) or n == (self._cut_step or -1) + 1:
            sys.stderr.write(msg + "\n")

    def step_timing(self) -> dict[str, Any]:
        """Median step time outside and inside the profiled window (_stepping.step_timing); kept once stopped.
        CUDA events time the steps once the run has stopped (reading them waits for the GPU)."""
        if self._timing is not None:
            return self._timing
        marks = self.gpu_marks if self._cuda and self._stopped else []
        out = step_timing(self.step_times, marks, self._torch.cuda.synchronize, self.step_num)
        if self._stopped:
            self._timing = out
        return out


def _teardown_cupti_after(torch: Any) -> None:
    """Ask Kineto to release CUPTI when the window closes, so steps after it run at full speed.

    Without teardown CUPTI's callbacks stay on and slow every later kernel launch (pytorch#146604). The crash
    that made PyTorch keep it off with CUDA graphs is fixed from CUDA 12.6; respect an explicit setting.
    """
    if "TEARDOWN_CUPTI" in os.environ or not torch.cuda.is_available():
        return
    try:
        major, minor = (int(p) for p in (torch.version.cuda or "0.0").split(".")[:2])
    except ValueError:
        return
    if (major, minor) >= (12, 6):
        os.environ["TEARDOWN_CUPTI"] = "1"


def _isatty() -> bool:
    try:
        return sys.stderr.isatty()
    except Exception:
        return False
