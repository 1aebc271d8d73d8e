"""Bounds on the profiled window besides its step count: wall time and memory growth.

A window of many tiny ops (an LBFGS step of thousands of closures) can record for minutes and take gigabytes
before its steps end; the watchdog asks the session to cut it, and the session says so.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable, Optional

POLL_S = 0.1


def rss_mb() -> Optional[float]:
    """This process's resident memory in MiB, or None where /proc is missing."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return None


class Watchdog:
    """Polls while the window records; calls cut(reason) once when a budget is spent."""

    def __init__(self, max_seconds: float, max_mb: float, cut: Callable[[str], None]) -> None:
        self.max_seconds, self.max_mb, self.cut = max_seconds, max_mb, cut
        self.t0 = time.monotonic()
        self.rss0 = rss_mb()
        self.peak_growth_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="idlehound-window-budget", daemon=True)

    def start(self) -> Watchdog:
        self._thread.start()
        return self

    def stop(self) -> None:
        """After this returns no cut request is on its way (one may be pending, not in flight)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)

    def over_budget(self) -> Optional[str]:
        """'time' or 'memory' when that budget is spent, else None."""
        if self.max_seconds > 0 and time.monotonic() - self.t0 > self.max_seconds:
            return "time"
        now = rss_mb()
        if now is not None and self.rss0 is not None:
            self.peak_growth_mb = max(self.peak_growth_mb, now - self.rss0)
            if self.max_mb > 0 and self.peak_growth_mb > self.max_mb:
                return "memory"
        return None

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            reason = self.over_budget()
            if reason:
                self.cut(reason)
                return
