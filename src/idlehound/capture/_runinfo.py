"""What a capture session writes into its run folder besides the profiler's own bookkeeping: where the folder
is, each window's trace and sidecar, and run.json (the command, schedule, environment, step times, window)."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from .. import sampler as _sampler
from ..runfolder import (
    RUN,
    make_dir,
    new_run_dir,
    shared_run_dir,
    sidecar_file,
    trace_file,
    worker_name,
    write_run_file,
)
from ._options import CaptureOptions
from ._sidecar import write_sidecar
from ._signals import EXIT_SIGINT, EXIT_SIGTERM

if TYPE_CHECKING:
    from ._session import Session


def distributed_rank() -> Optional[int]:
    """This process's rank when launched by torchrun with more than one process, else None."""
    try:
        return int(os.environ["RANK"]) if int(os.environ.get("WORLD_SIZE", "1")) > 1 else None
    except (KeyError, ValueError):
        return None


def session_dir(opts: CaptureOptions, label: str, rank: Optional[int]) -> Path:
    """An absolute folder: a script that calls os.chdir() still writes where the run began."""
    if opts.run_dir is not None:
        return make_dir(Path(os.path.abspath(opts.run_dir)), exist_ok=True)
    if rank is not None:
        return shared_run_dir(Path(opts.logdir), opts.run_name or label, rank)
    return new_run_dir(Path(opts.logdir), opts.run_name or label)


def this_worker() -> str:
    rank = os.environ.get("RANK")
    base = f"{socket.gethostname()}_{os.getpid()}"
    return worker_name(base, rank)


def export_window(s: Session, prof: Any) -> None:
    """Write the profiler's trace of the window that just closed, and its sidecar of exact source lines."""
    stamp = time.time_ns()
    path = trace_file(s.trace_dir, s.worker, stamp)
    if s._hurry:  # gzip at torch's level 9 took ~25 s per 10 MB window on a 2-core host
        path = path.with_suffix("")  # <worker>.<stamp>.pt.trace.json, read as the .gz is
        prof.export_chrome_trace(str(path))
        s.traces.append(path.name)
        return
    prof.export_chrome_trace(str(path))
    side = sidecar_file(s.trace_dir, s.worker, stamp)
    try:
        write_sidecar(prof, side, script=s.command[0] if s.command else "", cwd=s._cwd)
    except Exception as e:  # exact lines are a bonus; the trace itself is saved
        sys.stderr.write(f"idlehound: could not write source-line sidecar: {e}\n")
    s.traces.append(str(path.relative_to(s.run_dir)))


def write_run_json(
    s: Session,
    status: str,
    code: int | None = None,
    error: str | None = None,
    samples: dict[str, Any] | None = None,
) -> None:
    """run.json as the run stands: "running" from the start, "done" with the exit code and samples at the end."""
    info: dict[str, Any] = {
        "idlehound_run": 1,
        "status": status,
        "command": s.command,
        "cwd": os.getcwd(),
        "started": _dt.datetime.fromtimestamp(s._wall0).isoformat(timespec="seconds"),
        "wall_time_s": round(time.time() - s._wall0, 3),
        "exit_code": code,
        "error": error,
        "schedule": {
            "skip": s.opts.skip,
            "warmup": s.opts.warmup,
            "active": s.opts.active,
            "step_on": s.opts.step_on,
            "stop_after": s.opts.stop_after,
        },
        "worker": s.worker,
        "rank": s.rank,
        "world_size": int(os.environ.get("WORLD_SIZE", "1")),
        "traces": s.traces,
        "dataloaders": s.loaders,
        "dataloader": s.loaders[0] if s.loaders else None,
        "environment": _environment(),
        **s.flags,
        **s.step_timing(),
        **s.opts.extra,
    }
    if samples is not None:
        window = (s.window[0], s.window[-1]) if len(s.window) == 2 else None
        info["sampler"] = _sampler.summarize(samples, window)
        if samples.get("note"):
            info["sampler"]["note"] = samples["note"]
    info["window"] = s.window_info
    info["script_facts"] = s.facts
    write_run_file(s.run_dir, s.rank, RUN, info)


def ended_by(exit_code: Optional[int], error: Optional[str]) -> str:
    """How a window still open at the end of the run was ended."""
    if exit_code == EXIT_SIGINT and error and "nterrupt" in error:
        return "Ctrl-C"
    if exit_code == EXIT_SIGTERM and error and ("SIGTERM" in error or "Terminated" in error):
        return "SIGTERM"
    if error:
        return error if error.startswith("os._exit") else f"the script's error ({error.split(':')[0]})"
    return f"the script's exit (code {exit_code})" if exit_code else "the script's end"


def torch_flags() -> dict[str, Any]:
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
