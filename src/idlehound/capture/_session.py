"""A capture session: the profiler, how steps are found, the run folder, run.json and the sidecar."""

from __future__ import annotations

import _thread
import contextlib
import datetime as _dt
import os
import platform
import signal
import socket
import statistics
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from .. import sampler as _sampler
from ..errors import CaptureError
from ..runfolder import (
    RUN,
    SAMPLES,
    make_dir,
    new_run_dir,
    shared_run_dir,
    sidecar_file,
    trace_file,
    worker_name,
    write_run_file,
)
from ._budget import Watchdog
from ._dataloader import record_dataloaders
from ._quiet import kineto_quiet
from ._sidecar import write_sidecar
from ._signals import EXIT_SIGINT, EXIT_SIGTERM, call_previous
from ._watch import Watcher, WatchOptions


@dataclass
class CaptureOptions:
    """How to profile. The window is steps [skip + warmup, skip + warmup + active) of the run."""

    logdir: Path = Path("log")
    run_name: Optional[str] = None
    skip: int = 10
    warmup: int = 2
    active: int = 5
    step_on: str = "optimizer"  # "optimizer", "dataloader", "manual", or a function name
    stop_after: bool = False
    with_stack: bool = True
    record_shapes: bool = True
    profile_memory: bool = False
    sample_hz: float = 15.0
    progress: bool = True
    run_dir: Optional[Path] = None  # an existing folder to write into (ranks of one job share one)
    max_window_seconds: float = 120.0  # cut the window when it records longer than this (0: no limit)
    max_window_mb: float = (
        512.0  # ... or when the process grows by more than this while recording (0: no limit)
    )
    extra: dict[str, Any] = field(default_factory=dict)  # merged into run.json
    watch: Optional[WatchOptions] = None  # later windows on demand or on a slowdown (capture/_watch.py)


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
        self.run_dir = _session_dir(opts, label, self.rank)
        self.command = command
        self._cwd = os.getcwd()  # where relative frame file names are found, should the script chdir
        self.worker = _worker_name()
        self.traces: list[str] = []
        self.loaders: list[dict[str, Any]] = []
        self.step_num = 0
        # the host clock of each step, for as many steps as CUDA events are kept
        self.step_times: list[tuple[float, str]] = []
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
        self.gpu_marks: list[tuple[Any, str]] = []
        self._timing: Optional[dict[str, Any]] = None
        self._stopped = False
        self._profiled = False  # the profiler ran once already (one window per run)
        self._prev_handlers: dict[int, Any] = {}
        self._busy = False  # inside a profiler call: signals wait until it returns
        self._hurry = False  # saving after SIGTERM: write the trace as recorded, leave the rest for later
        self._pending: list[int] = []
        self._watchdog: Optional[Watchdog] = None
        self._cut_reason: Optional[str] = None  # a budget the window passed ("time", "memory")
        self._cut_step: Optional[int] = None  # the step during which the window was cut
        self._cut_signals = 0  # simulated Ctrl-Cs the watchdog sent that are still to arrive
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
        self._install_signals()
        self._undo.append(record_dataloaders(self.loaders))
        self._undo.append(_count_child_processes(self.facts))
        self._install_stepper()
        self.watcher = Watcher(self, o.watch).start()  # the step clock, and --watch
        self.sampler = _sampler.Sampler(hz=o.sample_hz).start() if o.sample_hz > 0 else None
        self._make_profiler = lambda: profile(
            activities=acts,
            schedule=self._schedule,
            on_trace_ready=self._on_trace,
            with_stack=o.with_stack,
            record_shapes=o.record_shapes,
            profile_memory=o.profile_memory,
        )
        self._maybe_start_profiler()
        self._write_run_json(status="running")
        _ACTIVE.append(self)
        return self

    def _maybe_start_profiler(self) -> None:
        """Start the profiler only when the window's warm-up begins, so the skipped steps pay nothing for it.

        It keeps the run's own step numbers: ProfilerStep#N in the trace is the N-th step of the run.
        """
        if self._prof is not None or self._profiled or self.step_num < self.opts.skip:
            return
        with self._held():
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
        if action in ("RECORD", "RECORD_AND_SAVE"):
            self._recorded += 1
        timed = self.step_num < self.window_end + MAX_TIMED_AFTER_WINDOW  # bounded for jobs of days
        if timed:
            self.step_times.append((now, action))
        if self._cuda and timed:
            ev = self._torch.cuda.Event(enable_timing=True)
            ev.record()  # asynchronous: times the GPU's pace without a sync
            self.gpu_marks.append((ev, action))
        if action in ("RECORD", "RECORD_AND_SAVE") and not self.window:
            self.window.append(self.step_times[-2][0] - self._t_start if len(self.step_times) > 1 else 0.0)
        if action == "RECORD_AND_SAVE":
            self.window.append(now - self._t_start)
            self.flags = _torch_flags()
        self.step_num += 1
        self._progress()
        if self._prof is not None:
            if self.step_num >= self.window_end:
                self._save_window("steps")
            else:
                try:
                    with (
                        self._held(),
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
            with self._held(reraise), kineto_quiet():
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
        if signal.getsignal(signal.SIGINT) == self._on_signal:
            self._cut_signals += 1
            _thread.interrupt_main(signal.SIGINT)
        else:
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

    # ---- signals
    def _install_signals(self) -> None:
        """Ctrl-C and SIGTERM pass through the session: held while a profiler call runs, then handled as
        before. A budget cut arrives as a simulated Ctrl-C, told apart by _cut_reason."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._prev_handlers[sig] = signal.getsignal(sig)
            signal.signal(sig, self._on_signal)

    def _restore_signals(self) -> None:
        for sig, prev in self._prev_handlers.items():
            if signal.getsignal(sig) == self._on_signal:  # the script did not install its own meanwhile
                signal.signal(sig, prev if prev is not None else signal.SIG_DFL)
        self._prev_handlers.clear()

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self._busy:
            self._pending.append(signum)
            if self._stopped:
                self._say("still saving the trace; the signal takes effect once it is written")
            return
        if signum == signal.SIGINT and self._cut_signals > 0:  # the watchdog's, not the user's
            self._cut_signals -= 1
            self._cut_window()
            return
        call_previous(signum, self._prev_handlers.get(signum))

    @contextlib.contextmanager
    def _held(self, reraise: bool = True):
        """Hold Ctrl-C and SIGTERM until the block is done, then act on them (or drop them, when already
        stopping): profiler calls must not stop half-way."""
        outer = self._busy
        self._busy = True
        try:
            yield
        finally:
            self._busy = outer
            if not outer:
                pending, self._pending = self._pending, []
                for signum in dict.fromkeys(pending) if reraise else ():
                    self._on_signal(signum, None)

    @property
    def window_end(self) -> int:
        return self.opts.skip + self.opts.warmup + self.opts.active

    def stop(self, exit_code: Optional[int], error: Optional[str] = None) -> Path:
        """Flush what was captured (a partial window too), write run.json; safe to call once."""
        with self._held(reraise=False):  # a second Ctrl-C must not cut the flush short or leave "running"
            for undo in reversed(self._undo):
                undo()
            self._undo.clear()
            self._stopped = True
            if self in _ACTIVE:
                _ACTIVE.remove(self)
            if not self.flags:
                self.flags = _torch_flags()
            if self._prof is not None:
                failed = self._save_window(_ended_by(exit_code, error), reraise=False)
                error = error or failed
            if self.watcher is not None:
                self.watcher.close(_ended_by(exit_code, error))
            if self.opts.progress:
                sys.stderr.write("\n" if _isatty() else "")
            samples = self.sampler.stop() if self.sampler else {"source": "none", "samples": []}
            write_run_file(self.run_dir, self.rank, SAMPLES, samples)
            self._write_run_json(status="done", exit_code=exit_code, error=error, samples=samples)
        self._restore_signals()
        return self.run_dir

    # ---- stepping
    def _install_stepper(self) -> None:
        how = self.opts.step_on
        if how == "optimizer":
            from torch.optim.optimizer import register_optimizer_step_post_hook

            handle = register_optimizer_step_post_hook(self._on_optimizer_step)
            self._undo.append(handle.remove)
        elif how == "dataloader":
            from torch.utils.data import dataloader as dl

            original = dl._BaseDataLoaderIter.__next__
            session = self
            started = [False]

            def __next__(it):
                if started[0]:
                    session.step()
                started[0] = True
                return original(it)

            dl._BaseDataLoaderIter.__next__ = __next__
            self._undo.append(lambda: setattr(dl._BaseDataLoaderIter, "__next__", original))
        elif how != "manual":
            self._undo.append(_step_on_function(how, self.step))

    def _on_optimizer_step(self, optimizer, args, kwargs) -> None:
        self.facts["optimizer_steps"] += 1
        if self.manual:
            return
        if self._first_opt is None:
            self._first_opt = id(optimizer)
        if id(optimizer) == self._first_opt:  # several optimizers per iteration: one step
            self.step()

    def _action(self, n: int) -> str:
        if (
            self._cut_step is not None and n >= self._cut_step
        ):  # after a cut: partly recorded, then not at all
            return "CUT" if n == self._cut_step else "NONE"
        name = self._schedule(n).name
        return "LATER_WINDOW" if self.later_window and name != "NONE" else name

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
    def _on_trace(self, prof) -> None:
        stamp = time.time_ns()
        path = trace_file(self.trace_dir, self.worker, stamp)
        if self._hurry:  # gzip at torch's level 9 took ~25 s per 10 MB window on a 2-core host
            path = path.with_suffix("")  # <worker>.<stamp>.pt.trace.json, read as the .gz is
            prof.export_chrome_trace(str(path))
            self.traces.append(path.name)
            return
        prof.export_chrome_trace(str(path))
        side = sidecar_file(self.trace_dir, self.worker, stamp)
        try:
            write_sidecar(prof, side, script=self.command[0] if self.command else "", cwd=self._cwd)
        except Exception as e:  # exact lines are a bonus; the trace itself is saved
            sys.stderr.write(f"idlehound: could not write source-line sidecar: {e}\n")
        self.traces.append(str(path.relative_to(self.run_dir)))

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
        """Median step time outside and inside the profiled window: the observer effect.

        On CUDA, steps are timed by events recorded on the stream at each step end (the GPU's pace, which the
        host clock misses while the CPU runs ahead); elsewhere by the host clock.
        """
        if self._timing is not None:
            return self._timing
        if self._cuda and len(self.gpu_marks) > 1 and self._stopped:
            self._torch.cuda.synchronize()
            pairs = [
                (a0, e0.elapsed_time(e1)) for (e0, a0), (e1, _) in zip(self.gpu_marks, self.gpu_marks[1:])
            ]
            clock = "cuda_events"
        else:
            ts = self.step_times
            pairs = [(a0, (t1 - t0) * 1e3) for (t0, a0), (t1, _) in zip(ts, ts[1:])]
            clock = "host"
        outside = [ms for a, ms in pairs if a not in ("RECORD", "RECORD_AND_SAVE")]
        inside = [ms for a, ms in pairs if a in ("RECORD", "RECORD_AND_SAVE")]
        # Every unprofiled step, before and after the window: the replay fits its host rate to their mean.
        first = next((i for i, (a, _) in enumerate(pairs) if a in ("RECORD", "RECORD_AND_SAVE")), len(pairs))
        last = max(
            (i for i, (a, _) in enumerate(pairs) if a in ("RECORD", "RECORD_AND_SAVE")), default=len(pairs)
        )
        # An interval is labelled by the step that opened it: the last "NONE" one already runs the profiler.
        steps_before = [round(ms, 4) for a, ms in pairs[:first] if a == "NONE"][:-1]
        steps_after = [round(ms, 4) for _, ms in pairs[last + 1 :]]
        outside = outside[3:] if len(outside) > 6 else outside  # first steps warm up caches and compile
        out: dict[str, Any] = {
            "steps_seen": self.step_num,
            "step_clock": clock,
            "step_ms_before_window": steps_before,
            "step_ms_after_window": steps_after,
        }
        if outside:
            out["unprofiled_step_ms"] = round(statistics.median(outside), 3)
        if inside:
            out["profiled_step_ms"] = round(statistics.median(inside), 3)
        if outside and inside:
            out["profiler_overhead"] = round(
                out["profiled_step_ms"] / max(out["unprofiled_step_ms"], 1e-9), 3
            )
        if self._stopped:
            self._timing = out
        return out

    def _write_run_json(
        self,
        status: str,
        exit_code: Optional[int] = None,
        error: Optional[str] = None,
        samples: Optional[dict] = None,
    ) -> None:
        info: dict[str, Any] = {
            "idlehound_run": 1,
            "status": status,
            "command": self.command,
            "cwd": os.getcwd(),
            "started": _dt.datetime.fromtimestamp(self._wall0).isoformat(timespec="seconds"),
            "wall_time_s": round(time.time() - self._wall0, 3),
            "exit_code": exit_code,
            "error": error,
            "schedule": {
                "skip": self.opts.skip,
                "warmup": self.opts.warmup,
                "active": self.opts.active,
                "step_on": self.opts.step_on,
                "stop_after": self.opts.stop_after,
            },
            "worker": self.worker,
            "rank": self.rank,
            "world_size": int(os.environ.get("WORLD_SIZE", "1")),
            "traces": self.traces,
            "dataloaders": self.loaders,
            "dataloader": self.loaders[0] if self.loaders else None,
            "environment": _environment(),
            **self.flags,
            **self.step_timing(),
            **self.opts.extra,
        }
        if samples is not None:
            window = (self.window[0], self.window[-1]) if len(self.window) == 2 else None
            info["sampler"] = _sampler.summarize(samples, window)
            if samples.get("note"):
                info["sampler"]["note"] = samples["note"]
        info["window"] = self.window_info
        info["script_facts"] = self.facts
        write_run_file(self.run_dir, self.rank, RUN, info)


def _ended_by(exit_code: Optional[int], error: Optional[str]) -> str:
    """How a window still open at the end of the run was ended."""
    if exit_code == EXIT_SIGINT and error and "nterrupt" in error:
        return "Ctrl-C"
    if exit_code == EXIT_SIGTERM and error and ("SIGTERM" in error or "Terminated" in error):
        return "SIGTERM"
    if error:
        return error if error.startswith("os._exit") else f"the script's error ({error.split(':')[0]})"
    return f"the script's exit (code {exit_code})" if exit_code else "the script's end"


def distributed_rank() -> Optional[int]:
    """This process's rank when launched by torchrun with more than one process, else None."""
    try:
        return int(os.environ["RANK"]) if int(os.environ.get("WORLD_SIZE", "1")) > 1 else None
    except (KeyError, ValueError):
        return None


def _session_dir(opts: CaptureOptions, label: str, rank: Optional[int]) -> Path:
    """An absolute folder: a script that calls os.chdir() still writes where the run began."""
    if opts.run_dir is not None:
        return make_dir(Path(os.path.abspath(opts.run_dir)), exist_ok=True)
    if rank is not None:
        return shared_run_dir(Path(opts.logdir), opts.run_name or label, rank)
    return new_run_dir(Path(opts.logdir), opts.run_name or label)


def _teardown_cupti_after(torch) -> None:
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


def _worker_name() -> str:
    rank = os.environ.get("RANK")
    base = f"{socket.gethostname()}_{os.getpid()}"
    return worker_name(base, rank)


def _isatty() -> bool:
    try:
        return sys.stderr.isatty()
    except Exception:
        return False


def _torch_flags() -> dict[str, Any]:
    import torch

    return {
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
        "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }


def _environment() -> dict[str, Any]:
    import torch

    env: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
    }
    try:
        env["cudnn"] = torch.backends.cudnn.version()
    except Exception:
        env["cudnn"] = None
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        env.update(gpu=p.name, gpu_memory_bytes=p.total_memory, gpu_count=torch.cuda.device_count())
    return env


def _count_child_processes(facts: dict[str, int]) -> Callable[[], None]:
    """Count processes the script starts (Hogwild, mp.spawn), DataLoader workers aside: a script that trains
    only in children makes no step here, and the user should hear that rather than 'lower --skip'."""
    from multiprocessing.process import BaseProcess

    original = BaseProcess.start

    def start(proc):
        if "_worker_loop" not in getattr(getattr(proc, "_target", None), "__name__", ""):
            facts["child_processes"] += 1
        return original(proc)

    BaseProcess.start = start  # type: ignore[method-assign]  # counting child processes: patched on purpose
    return lambda: setattr(BaseProcess, "start", original)


def _step_on_function(name: str, step: Callable[[], None]) -> Callable[[], None]:
    """Step each time a Python function called `name` returns (main thread).

    Through sys.settrace, not sys.setprofile: the profiler's Python-stack tracer takes the profile hook when
    it starts, which silenced the old hook for the rest of the run. Only frames of `name` get a local tracer,
    with line events off, so other code pays one call check.
    """
    previous = sys.gettrace()

    def on_return(frame, event, arg):
        if event == "return":
            step()
        return on_return

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code.co_name == name:
            frame.f_trace_lines = False
            return on_return
        return previous(frame, event, arg) if previous is not None else None

    sys.settrace(tracer)
    return lambda: sys.settrace(previous)


def options_dict(o: CaptureOptions) -> dict[str, Any]:
    d = asdict(o)
    d["logdir"] = str(o.logdir)
    return d
