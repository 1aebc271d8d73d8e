"""Run an unmodified script (or -m module) in-process under a capture session, as python would."""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..errors import CaptureError
from ._session import CaptureOptions, Session, StopRun


@dataclass
class RunResult:
    run_dir: Path
    exit_code: int
    traces: list[str]


def run_script(target: str, args: list[str], module: bool = False,
               opts: Optional[CaptureOptions] = None) -> RunResult:
    """Execute target with sys.argv = [target, *args] under the profiler; never lose what was captured."""
    opts = opts or CaptureOptions()
    if not module and not Path(target).is_file():
        raise CaptureError(f"{target}: no such script")
    label = Path(target).stem if not module else target.rsplit(".", 1)[-1]
    session = Session(opts, label, [target, *args] if not module else ["-m", target, *args])
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    code: int = 0
    error: Optional[str] = None
    session.start()
    try:
        if module:
            sys.argv[:] = [target, *args]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.argv[:] = [target, *args]
            sys.path.insert(0, str(Path(target).resolve().parent))
            runpy.run_path(target, run_name="__main__")
    except StopRun:
        code = 0
    except SystemExit as e:
        code = _exit_code(e.code)
    except KeyboardInterrupt:
        code, error = 130, "interrupted (Ctrl-C)"
        sys.stderr.write("\nidlehound: interrupted; saving what was captured\n")
    except BaseException as e:  # the user's script failed: show its traceback as python would
        code, error = 1, f"{type(e).__name__}: {e}"
        traceback.print_exc()
    finally:
        sys.argv[:] = saved_argv
        if saved_path0 is not None and sys.path and sys.path[0] != saved_path0:
            sys.path.pop(0)
        session.stop(code, error)
    return RunResult(session.run_dir, code, session.traces)


def _exit_code(c) -> int:
    if c is None:
        return 0
    if isinstance(c, int):
        return c
    sys.stderr.write(f"{c}\n")
    return 1
