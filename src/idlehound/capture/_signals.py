"""SIGTERM treated like Ctrl-C: it raises in the main thread, so the trace is flushed and run.json completed;
and the gate a capture session holds them at while a profiler call runs."""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
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


class Deferred:
    """Ctrl-C and SIGTERM recorded, not raised, while `idlehound run` imports torch and starts its session.

    torch's import runs Python called from C++ (pybind11); a KeyboardInterrupt raised there aborts the process
    (`terminate called after throwing an instance of 'pybind11::error_already_set'`, SIGABRT) or mangles the
    exception an import was handling. Blocking the signals in the main thread is not enough: a thread started
    earlier (OpenBLAS's, at numpy's import) receives them and Python still runs the handler in the main thread.
    So the handler here only records; `deliver()` raises what it recorded at a safe point. While
    `exit_on_repeat` is set (nothing saved yet), a second signal ends the process at once.
    """

    def __init__(self) -> None:
        self.pending: list[int] = []
        self.previous: dict[int, Any] = {}  # the handlers in place before, put back on exit
        self.exit_on_repeat = True

    def start(self) -> Deferred:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                prev = signal.getsignal(sig)
                if prev != signal.SIG_IGN:  # an ignored signal stays ignored (nohup, a background job)
                    self.previous[sig] = prev
                    signal.signal(sig, self._record)
            _DEFERRING.append(self)
        return self

    def end(self) -> None:
        """Put the handlers in charge back (the session's SignalGate, once started); `deliver()` acts next."""
        if self in _DEFERRING:
            _DEFERRING.remove(self)
        for sig, prev in self.previous.items():
            if signal.getsignal(sig) == self._record:  # the script's start-up did not install its own
                signal.signal(sig, prev if prev is not None else signal.SIG_DFL)

    def _record(self, signum: int, frame: Any) -> None:
        what = b"interrupted" if signum == signal.SIGINT else b"terminated (SIGTERM)"
        if self.exit_on_repeat and self.pending:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            os.write(2, b"idlehound: " + what + b" again before the script started; nothing was captured\n")
            os._exit(EXIT_SIGINT if signum == signal.SIGINT else EXIT_SIGTERM)
        if self.exit_on_repeat:  # torch's import may take seconds more: say that the signal was seen
            os.write(
                2, b"\nidlehound: " + what + b"; stopping once torch is imported (Ctrl-C again to stop now)\n"
            )
        self.pending.append(signum)

    def in_charge(self, sig: int) -> Any:
        """The handler that acts on sig once the deferral ends."""
        now = signal.getsignal(sig)
        return self.previous.get(sig, now) if now == self._record else now

    def hand_over(self, sig: int, handler: Any) -> bool:
        """Install handler when the deferral ends rather than now; False when sig is not deferred."""
        if sig not in self.previous or signal.getsignal(sig) != self._record:
            return False
        self.previous[sig] = handler
        return True

    def deliver(self) -> None:
        """Act on the signals recorded so far, as their handler would have (KeyboardInterrupt, Terminated)."""
        pending, self.pending = self.pending, []
        for sig in dict.fromkeys(pending):
            call_previous(sig, self.in_charge(sig))


_DEFERRING: list[Deferred] = []  # in this process's main thread, at most one: `idlehound run`'s start-up


def handler_in_charge(sig: int) -> Any:
    """signal.getsignal(sig), looking past a Deferred's recording handler to the one it stands in for."""
    return _DEFERRING[-1].in_charge(sig) if _DEFERRING else signal.getsignal(sig)


def install_handler(sig: int, handler: Any) -> None:
    """signal.signal(sig, handler), or, while a Deferred records sig, once it ends."""
    if not (_DEFERRING and _DEFERRING[-1].hand_over(sig, handler)):
        signal.signal(sig, handler)


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
            self._prev_handlers[sig] = handler_in_charge(sig)
            install_handler(sig, self.on_signal)

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
