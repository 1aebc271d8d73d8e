"""SIGTERM treated like Ctrl-C: it raises in the main thread, so the trace is flushed and run.json completed."""

from __future__ import annotations

import signal
import threading
from typing import Any

EXIT_SIGINT = 130  # what a shell reports for a process ended by SIGINT
EXIT_SIGTERM = 143


class Terminated(BaseException):
    """SIGTERM arrived (a `timeout`, a batch scheduler's time limit). Not an Exception: `except Exception` in a
    script must not swallow it, just as it does not swallow KeyboardInterrupt."""


def raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated("terminated (SIGTERM)")


def sigterm_raises() -> None:
    """From now on SIGTERM raises Terminated in the main thread (unless someone installed a handler already)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, raise_terminated)


def call_previous(signum: int, previous: Any) -> None:
    """Do what the handler before ours would have done with this signal."""
    if callable(previous):
        previous(signum, None)
    elif previous == signal.SIG_IGN:
        return
    elif signum == signal.SIGTERM:
        raise Terminated("terminated (SIGTERM)")
    else:
        raise KeyboardInterrupt
