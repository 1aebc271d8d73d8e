"""A capture session: the profiler, how steps are found, the run folder, run.json and the sidecar."""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
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

from ..errors import CaptureError
from . import _sampler
from ._dataloader import record_dataloaders
from ._sidecar import write_sidecar


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
    extra: dict[str, Any] = field(default_factory=dict)  # merged into run.json


MAX_TIMED_AFTER_WINDOW = 500  # CUDA events kept per run: enough for the medians, bounded for long jobs


class StopRun(SystemExit):
    """Raised from a step hook when --stop-after ends the script after the window."""


def new_run_dir(logdir: Path, label: str) -> Path:
    """A fresh folder under logdir; never reuses an existing one."""
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = f"{label}-{stamp}"
    logdir.mkdir(parents=True, exist_ok=True)
    for i in range(1000):
        p = logdir / (base if i == 0 else f"{base}-{i}")
        try:
            p.mkdir()
            return p
        except FileExistsError:
            continue
    raise CaptureError(f"{logdir}: could not create a new run folder")


class Session:
    def __init__(self, opts: CaptureOptions, label: str, command: list[str]) -> None:
        try:
            import torch  # noqa: F401
        except ImportError:
            raise CaptureError("capture needs PyTorch: pip install 'idlehound[torch]'") from None
        self.opts = opts
        self.rank = distributed_rank()
        self.run_dir = _session_dir(opts, label, self.rank)
        self.command = command
        self.worker = _worker_name()
        self.traces: list[str] = []
        self.loaders: list[dict[str, Any]] = []
        self.step_num = 0
        self.step_times: list[tuple[float, str]] = []
        self.window: list[float] = []
        self.manual = opts.step_on == "manual"
        self._undo: list[Callable[[], None]] = []
        self._prof = None
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
        self._undo.append(record_dataloaders(self.loaders))
        self._install_stepper()
        self.sampler = _sampler.Sampler(hz=o.sample_hz).start() if o.sample_hz > 0 else None
        self._make_profiler = lambda: profile(activities=acts, schedule=self._schedule, on_trace_ready=self._on_trace,
                                              with_stack=o.with_stack, record_shapes=o.record_shapes,
                                              profile_memory=o.profile_memory)
        self._maybe_start_profiler()
        self._write_run_json(status="running")
        return self

    def _maybe_start_profiler(self) -> None:
        """Start the profiler only when the window's warm-up begins, so the skipped steps pay nothing for it.

        It keeps the run's own step numbers: ProfilerStep#N in the trace is the N-th step of the run.
        """
        if self._prof is not None or self._profiled or self.step_num < self.opts.skip:
            return
        with _sigint_deferred():
            prof = self._make_profiler()
            prof.step_num = self.step_num
            prof.current_action = self._schedule(self.step_num)
            prof.start()
            self._prof, self._profiled = prof, True

    def step(self) -> None:
        """One training step ended."""
        now = time.monotonic()
        action = self._action(self.step_num)
        self.step_times.append((now, action))
        if self._cuda and self.step_num < self.window_end + MAX_TIMED_AFTER_WINDOW:
            ev = self._torch.cuda.Event(enable_timing=True)
            ev.record()  # asynchronous: times the GPU's pace without a sync
            self.gpu_marks.append((ev, action))
        if action in ("RECORD", "RECORD_AND_SAVE") and not self.window:
            self.window.append(self.step_times[-2][0] - self._t_start if len(self.step_times) > 1 else 0.0)
        if action == "RECORD_AND_SAVE":
            self.window.append(now - self._t_start)
            self.flags = _torch_flags()
        self.step_num += 1
        if self._prof is not None:
            with _sigint_deferred():  # a Ctrl-C inside the profiler's bookkeeping would leave it half-stepped
                self._prof.step()
            if self.step_num >= self.window_end:
                self._release_profiler()
        else:
            self._maybe_start_profiler()
        self._progress()
        if self.opts.stop_after and self.step_num >= self.window_end:
            raise StopRun(0)

    def _release_profiler(self) -> None:
        """The window is saved: stop the profiler so the rest of the run pays nothing for it."""
        try:
            with _sigint_deferred():
                self._prof.stop()
        except Exception as e:  # the trace is already written; say so and run on
            sys.stderr.write(f"idlehound: profiler stop after the window failed: {e}\n")
        self._prof = None

    @property
    def window_end(self) -> int:
        return self.opts.skip + self.opts.warmup + self.opts.active

    def stop(self, exit_code: Optional[int], error: Optional[str] = None) -> Path:
        """Flush what was captured (a partial window too), write run.json; safe to call once."""
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()
        if not self.flags:
            self.flags = _torch_flags()
        if self._prof is not None:
            try:
                with _sigint_deferred(reraise=False):  # a second Ctrl-C must not cut the flush short
                    self._prof.stop()
            except Exception as e:  # keep the run's own exit code; report the profiler's failure
                error = error or f"profiler stop failed: {e}"
            self._prof = None
        self._stopped = True
        if self.opts.progress:
            sys.stderr.write("\n" if _isatty() else "")
        samples = self.sampler.stop() if self.sampler else {"source": "none", "samples": []}
        run_file(self.run_dir, self.rank, "samples").write_text(json.dumps(samples))
        self._write_run_json(status="done", exit_code=exit_code, error=error, samples=samples)
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
        if self.manual:
            return
        if self._first_opt is None:
            self._first_opt = id(optimizer)
        if id(optimizer) == self._first_opt:  # several optimizers per iteration: one step
            self.step()

    def _action(self, n: int) -> str:
        return self._schedule(n).name

    # ---- output
    def _on_trace(self, prof) -> None:
        stamp = time.time_ns()
        path = self.run_dir / f"{self.worker}.{stamp}.pt.trace.json.gz"
        prof.export_chrome_trace(str(path))
        side = self.run_dir / f"{self.worker}.{stamp}.sidecar.json.gz"
        try:
            write_sidecar(prof, side, script=self.command[0] if self.command else "")
        except Exception as e:  # exact lines are a bonus; the trace itself is saved
            sys.stderr.write(f"idlehound: could not write source-line sidecar: {e}\n")
        self.traces.append(path.name)

    def _progress(self) -> None:
        if not self.opts.progress:
            return
        o, n = self.opts, self.step_num
        start = o.skip + o.warmup
        if n <= start:
            msg = f"idlehound: warming up, step {n}/{start} before the profiled window"
        elif n <= self.window_end:
            msg = f"idlehound: profiling step {n - start}/{o.active}"
        else:
            msg = f"idlehound: window captured ({o.active} steps); running on unprofiled, step {n}"
        if _isatty():
            sys.stderr.write("\r" + msg.ljust(78))
            sys.stderr.flush()
        elif n in (1, start, start + 1, self.window_end):
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
            pairs = [(a0, e0.elapsed_time(e1)) for (e0, a0), (e1, _) in zip(self.gpu_marks, self.gpu_marks[1:])]
            clock = "cuda_events"
        else:
            ts = self.step_times
            pairs = [(a0, (t1 - t0) * 1e3) for (t0, a0), (t1, _) in zip(ts, ts[1:])]
            clock = "host"
        outside = [ms for a, ms in pairs if a not in ("RECORD", "RECORD_AND_SAVE")]
        inside = [ms for a, ms in pairs if a in ("RECORD", "RECORD_AND_SAVE")]
        # Every unprofiled step, before and after the window: the replay fits its host rate to their mean.
        first = next((i for i, (a, _) in enumerate(pairs) if a in ("RECORD", "RECORD_AND_SAVE")), len(pairs))
        last = max((i for i, (a, _) in enumerate(pairs) if a in ("RECORD", "RECORD_AND_SAVE")), default=len(pairs))
        # An interval is labelled by the step that opened it: the last "NONE" one already runs the profiler.
        steps_before = [round(ms, 4) for a, ms in pairs[:first] if a == "NONE"][:-1]
        steps_after = [round(ms, 4) for _, ms in pairs[last + 1:]]
        outside = outside[3:] if len(outside) > 6 else outside  # first steps warm up caches and compile
        out: dict[str, Any] = {"steps_seen": self.step_num, "step_clock": clock,
                               "step_ms_before_window": steps_before, "step_ms_after_window": steps_after}
        if outside:
            out["unprofiled_step_ms"] = round(statistics.median(outside), 3)
        if inside:
            out["profiled_step_ms"] = round(statistics.median(inside), 3)
        if outside and inside:
            out["profiler_overhead"] = round(out["profiled_step_ms"] / max(out["unprofiled_step_ms"], 1e-9), 3)
        if self._stopped:
            self._timing = out
        return out

    def _write_run_json(self, status: str, exit_code: Optional[int] = None, error: Optional[str] = None,
                        samples: Optional[dict] = None) -> None:
        info: dict[str, Any] = {
            "idlehound_run": 1, "status": status, "command": self.command, "cwd": os.getcwd(),
            "started": _dt.datetime.fromtimestamp(self._wall0).isoformat(timespec="seconds"),
            "wall_time_s": round(time.time() - self._wall0, 3), "exit_code": exit_code, "error": error,
            "schedule": {"skip": self.opts.skip, "warmup": self.opts.warmup, "active": self.opts.active,
                         "step_on": self.opts.step_on, "stop_after": self.opts.stop_after},
            "worker": self.worker, "rank": self.rank, "world_size": int(os.environ.get("WORLD_SIZE", "1")),
            "traces": self.traces, "dataloaders": self.loaders,
            "dataloader": self.loaders[0] if self.loaders else None,
            "environment": _environment(), **self.flags, **self.step_timing(), **self.opts.extra,
        }
        if samples is not None:
            window = (self.window[0], self.window[-1]) if len(self.window) == 2 else None
            info["sampler"] = _sampler.summarize(samples, window)
            if samples.get("note"):
                info["sampler"]["note"] = samples["note"]
        run_file(self.run_dir, self.rank, "run").write_text(json.dumps(info, indent=2, default=str))


@contextlib.contextmanager
def _sigint_deferred(reraise: bool = True):
    """Hold a Ctrl-C until the block is done, then raise it (or drop it, when already stopping): profiler calls
    must not stop half-way."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught and reraise:
            raise KeyboardInterrupt


def distributed_rank() -> Optional[int]:
    """This process's rank when launched by torchrun with more than one process, else None."""
    try:
        return int(os.environ["RANK"]) if int(os.environ.get("WORLD_SIZE", "1")) > 1 else None
    except (KeyError, ValueError):
        return None


def shared_run_dir(logdir: Path, label: str) -> Path:
    """The folder all local ranks of one torchrun launch share: named after the launching agent's pid."""
    stamp = _dt.datetime.now().strftime("%Y%m%d")
    run_id = os.environ.get("TORCHELASTIC_RUN_ID", "none")
    tag = run_id if run_id not in ("", "none") else f"agent{os.getppid()}"
    p = Path(logdir) / f"{label}-{stamp}-{tag}"
    p.mkdir(parents=True, exist_ok=True)
    return p


def _session_dir(opts: CaptureOptions, label: str, rank: Optional[int]) -> Path:
    if opts.run_dir is not None:
        Path(opts.run_dir).mkdir(parents=True, exist_ok=True)
        return Path(opts.run_dir)
    if rank is not None:
        return shared_run_dir(Path(opts.logdir), opts.run_name or label)
    return new_run_dir(Path(opts.logdir), opts.run_name or label)


def run_file(run_dir: Path, rank: Optional[int], stem: str) -> Path:
    """run.json / samples.json, or run.rank3.json for rank 3 of a multi-process job."""
    return run_dir / (f"{stem}.json" if rank is None else f"{stem}.rank{rank}.json")


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
    return f"rank{rank}_{base}" if rank is not None else base


def _isatty() -> bool:
    try:
        return sys.stderr.isatty()
    except Exception:
        return False


def _torch_flags() -> dict[str, Any]:
    import torch

    return {"cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
            "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
            "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
            "float32_matmul_precision": torch.get_float32_matmul_precision()}


def _environment() -> dict[str, Any]:
    import torch

    env: dict[str, Any] = {
        "python": platform.python_version(), "platform": platform.platform(), "cpu_count": os.cpu_count(),
        "torch": torch.__version__, "cuda": torch.version.cuda, "cuda_available": torch.cuda.is_available(),
    }
    try:
        env["cudnn"] = torch.backends.cudnn.version()
    except Exception:
        env["cudnn"] = None
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        env.update(gpu=p.name, gpu_memory_bytes=p.total_memory, gpu_count=torch.cuda.device_count())
    return env


def _step_on_function(name: str, step: Callable[[], None]) -> Callable[[], None]:
    """Step each time a Python function called `name` returns (main thread, via sys.setprofile)."""
    previous = sys.getprofile()

    def tracer(frame, event, arg):
        if event == "return" and frame.f_code.co_name == name:
            step()
        if previous is not None:
            previous(frame, event, arg)

    sys.setprofile(tracer)
    return lambda: sys.setprofile(previous)


def options_dict(o: CaptureOptions) -> dict[str, Any]:
    d = asdict(o)
    d["logdir"] = str(o.logdir)
    return d
