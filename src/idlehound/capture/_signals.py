"""SIGTERM treated like Ctrl-C: it raises in the main thread, so the trace is flushed and run.json completed;
and the gate a capture session holds them at while a profiler call runs."""

from __future__ import annotations

import _thread
import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any, Callable

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


class SignalGate:
    """Ctrl-C and SIGTERM pass through a capture session: held while a profiler call runs, then handled as before.
    A budget cut arrives as a simulated Ctrl-C (interrupt_main), told apart by the count of those still to come."""

    def __init__(self, on_cut: Callable[[], None], say: Callable[[str], None], stopping: Callable[[], bool]):
        self._on_cut = on_cut  # cut the window (the watchdog's simulated Ctrl-C arrived)
        self._say = say
        self._stopping = stopping  # the session is saving at its end
        self._prev_handlers: dict[int, Any] = {}
        self._busy = False  # inside a profiler call: signals wait until it returns
        self._pending: list[int] = []
        self._cut_signals = 0  # simulated Ctrl-Cs sent that are still to arrive

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._prev_handlers[sig] = signal.getsignal(sig)
            signal.signal(sig, self.on_signal)

    def restore(self) -> None:
        for sig, prev in self._prev_handlers.items():
            if signal.getsignal(sig) == self.on_signal:  # the script did not install its own meanwhile
                signal.signal(sig, prev if prev is not None else signal.SIG_DFL)
        self._prev_handlers.clear()

    def interrupt_main(self) -> bool:
        """From another thread: a simulated Ctrl-C that cuts the window; False when the script's own SIGINT
        handler bars it (the session then cuts at the next step end)."""
        if signal.getsignal(signal.SIGINT) != self.on_signal:
            return False
        self._cut_signals += 1
        _thread.interrupt_main(signal.SIGINT)
        return True

    def on_signal(self, signum: int, frame: Any) -> None:
        if self._busy:
            self._pending.append(signum)
            if self._stopping():
                self._say("still saving the trace; the signal takes effect once it is written")
            return
        if signum == signal.SIGINT and self._cut_signals > 0:  # the watchdog's, not the user's
            self._cut_signals -= 1
            self._on_cut()
            return
        call_previous(signum, self._prev_handlers.get(signum))

    @contextlib.contextmanager
    def held(self, reraise: bool = True) -> Iterator[None]:
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
                    self.on_signal(signum, None)
