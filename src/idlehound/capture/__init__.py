"""Capture: run a script or a block under the profiler; write traces, a source-line sidecar, run.json."""

from ..runfolder import new_run_dir
from ._api import profile
from ._clock import read_clock
from ._control import LEAD_S, RequestExists, read_acks, read_request, retire_request, write_request
from ._options import CaptureOptions
from ._quiet import kineto_quiet
from ._runner import RunResult, run_distributed, run_script, wait_for_ranks
from ._session import Session, active_session
from ._signals import EXIT_SIGINT, EXIT_SIGTERM, Terminated, sigterm_raises
from ._trigger import parse_when
from ._watch import WatchOptions

__all__ = [
    "LEAD_S",
    "RequestExists",
    "parse_when",
    "read_acks",
    "read_clock",
    "read_request",
    "retire_request",
    "write_request",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
    "CaptureOptions",
    "RunResult",
    "Session",
    "Terminated",
    "WatchOptions",
    "active_session",
    "kineto_quiet",
    "new_run_dir",
    "profile",
    "run_distributed",
    "run_script",
    "sigterm_raises",
    "wait_for_ranks",
]
