"""Run an unmodified script (or -m module) in-process under a capture session, as python would."""

from __future__ import annotations

import contextlib
import os
import runpy
import signal
import sys
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NoReturn, Optional

from ..errors import CaptureError
from ._options import CaptureOptions
from ._session import Session, StopRun
from ._signals import EXIT_SIGINT, EXIT_SIGTERM, Deferred, Terminated


@dataclass
class RunResult:
    run_dir: Path
    exit_code: int
    traces: list[str]
    rank: Optional[int] = None


def run_script(
    target: str, args: list[str], module: bool = False, opts: Optional[CaptureOptions] = None
) -> RunResult:
    """Execute target with sys.argv = [target, *args] under the profiler; never lose what was captured."""
    opts = opts or CaptureOptions()
    if not module and not Path(target).is_file():
        raise CaptureError(f"{target}: no such script")
    label = Path(target).stem if not module else target.rsplit(".", 1)[-1]
    held = Deferred().start()  # Ctrl-C and SIGTERM recorded, raised only by `held.deliver()` below
    try:
        _import_torch()
        held.deliver()  # one that came during the import: raised here, before there is a run folder
        held.exit_on_repeat = False  # a run folder from here: a second one waits too (milliseconds)
        session = Session(opts, label, [target, *args] if not module else ["-m", target, *args])
        session.start()  # its SignalGate takes over Ctrl-C and SIGTERM when `held` ends
    except BaseException:
        held.end()
        raise
    rank = session.rank
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    code: int = 0
    error: Optional[str] = None
    restore_exit = _flush_on_os_exit(session)
    try:
        held.end()
        held.deliver()  # one that came while the session started
        code, error = _execute(target, args, module)
    except (KeyboardInterrupt, Terminated) as e:  # at the start, or a second one while the first was handled
        code, error = _signalled(e)
    finally:
        mask = _block_signals()  # nothing stops the flush half-way or leaves run.json at "running"
        try:
            restore_exit()
            sys.argv[:] = saved_argv
            if saved_path0 is not None and sys.path and sys.path[0] != saved_path0:
                sys.path.pop(0)
            session.stop(code, error)
        finally:
            _drop_pending_signals(mask)
    return RunResult(session.run_dir, code, session.traces, rank)


def _import_torch() -> None:
    """torch and what a script's first optimizer imports lazily (torch._dynamo, seconds of imports that call
    back into Python from C++), imported while Ctrl-C is deferred; the script's own imports then find them done."""
    try:
        import torch.profiler  # noqa: F401
    except ImportError:
        return  # the session says what to install
    with contextlib.suppress(Exception):  # a torch without a working dynamo: the script meets that itself
        import torch._dynamo  # noqa: F401


def _execute(target: str, args: list[str], module: bool) -> tuple[int, Optional[str]]:
    """Run the script as python would; returns its exit code and, when it did not end by itself, why."""
    try:
        sys.argv[:] = [target, *args]
        if module:
            sys.path.insert(0, os.getcwd())
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, str(Path(target).resolve().parent))
            runpy.run_path(target, run_name="__main__")
    except StopRun:
        return 0, None
    except SystemExit as e:
        return _exit_code(e.code), None
    except (KeyboardInterrupt, Terminated) as e:
        return _signalled(e)
    except BaseException as e:  # the user's script failed: show its traceback as python would
        print_user_traceback(e)
        return 1, f"{type(e).__name__}: {e}"
    return 0, None


_OURS = (str(Path(__file__).resolve().parent) + os.sep, str(Path(runpy.__file__).resolve()), "<frozen runpy>")


def _ours(filename: str) -> bool:
    """A frame of idlehound's capture (the runner, its step hooks) or of runpy: not the user's code."""
    return filename.startswith(_OURS[0]) or filename in _OURS[1:]


def _drop_our_frames(te: traceback.TracebackException) -> None:
    te.stack = traceback.StackSummary.from_list([f for f in te.stack if not _ours(f.filename)])
    for chained in (te.__cause__, te.__context__):
        if chained is not None:
            _drop_our_frames(chained)


def print_user_traceback(e: BaseException) -> None:
    """The traceback `python script.py` would print: without the runner's, runpy's and the step hooks' frames."""
    te = traceback.TracebackException.from_exception(e)
    _drop_our_frames(te)
    sys.stderr.write("".join(te.format()))


def _signalled(e: BaseException) -> tuple[int, str]:
    code, error = (
        (EXIT_SIGINT, "interrupted (Ctrl-C)")
        if isinstance(e, KeyboardInterrupt)
        else (EXIT_SIGTERM, "terminated (SIGTERM)")
    )
    sys.stderr.write(
        f"\nidlehound: {error.split(' (')[0] if code == EXIT_SIGINT else error}; saving what was captured\n"
    )
    return code, error


def _block_signals() -> Optional[set[int]]:
    """Block SIGINT and SIGTERM at the OS level (delivered once unblocked); returns the mask to restore."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def _unblock_signals(mask: Optional[set[int]]) -> None:
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _drop_pending_signals(mask: Optional[set[int]]) -> None:
    """A Ctrl-C or SIGTERM that came while the run was being saved: the run has ended already; say so, drop it."""
    if mask is None:
        return
    for sig in signal.sigpending() & {signal.SIGINT, signal.SIGTERM}:
        signal.sigwait({sig})
        sys.stderr.write(
            f"idlehound: {signal.Signals(sig).name} came while the run was being saved; it had ended "
            "already\n"
        )
    _unblock_signals(mask)


def _flush_on_os_exit(session: Session) -> Callable[[], None]:
    """os._exit() ends the process at once, past every finally: save the trace and run.json first.

    Only in this process: forked children (DataLoader workers, multiprocessing) leave by os._exit too.
    """
    real_exit, pid = os._exit, os.getpid()

    def _exit(code: int) -> NoReturn:
        if os.getpid() == pid and not session._stopped:
            with contextlib.suppress(BaseException):
                session.stop(code, f"os._exit({code})")
                what = (
                    f"trace saved, not analysed: idlehound analyze {session.run_dir}"
                    if session.traces
                    else f"no trace was captured ({session.step_num} step(s); the window starts after "
                    f"{session.opts.skip + session.opts.warmup})"
                )
                sys.stderr.write(f"idlehound: the script called os._exit({code}): {what}\n")
                sys.stderr.flush()
        real_exit(code)

    os._exit = _exit  # type: ignore[assignment]  # same call, parameter named differently
    return lambda: setattr(os, "_exit", real_exit)


def _exit_code(c: object) -> int:
    if c is None:
        return 0
    if isinstance(c, int):
        return c
    sys.stderr.write(f"{c}\n")
    return 1


def run_distributed(
    target: str, args: list[str], nproc: int, module: bool, opts: CaptureOptions, inner_flags: list[str]
) -> RunResult:
    """Launch target on nproc processes through torchrun; every rank profiles itself into one run folder."""
    import subprocess

    from ..runfolder import RANK_RUN_GLOB, RUN, TRACE_GLOB, new_run_dir, write_run_file

    label = Path(target).stem if not module else target.rsplit(".", 1)[-1]
    run_dir = new_run_dir(Path(opts.logdir), opts.run_name or label)
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={nproc}",
        "-m",
        "idlehound",
        "run",
        "--run-dir",
        str(run_dir),
        "--no-report",
        *inner_flags,
        *(["-m", target] if module else [target]),
        *args,
    ]
    code = subprocess.call(cmd)
    traces = sorted(p.name for p in run_dir.glob(TRACE_GLOB))
    write_run_file(
        run_dir,
        None,
        RUN,
        {
            "idlehound_run": 1,
            "status": "done",
            "command": cmd,
            "nproc": nproc,
            "exit_code": code,
            "traces": traces,
            "rank_runs": sorted(p.name for p in run_dir.glob(RANK_RUN_GLOB)),
        },
    )
    return RunResult(run_dir, code, traces)


def wait_for_ranks(run_dir: Path, world_size: int, timeout_s: float = 120.0) -> bool:
    """Rank 0 of a user-launched torchrun job waits until every rank has written its run.rankN.json."""
    import json
    import time

    from ..runfolder import RANK_RUN_GLOB

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done = 0
        for p in run_dir.glob(RANK_RUN_GLOB):
            with contextlib.suppress(OSError, ValueError):  # a rank may be writing it right now
                done += json.loads(p.read_text()).get("status") == "done"
        if done >= world_size:
            return True
        time.sleep(0.5)
    return False
