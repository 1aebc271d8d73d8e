"""When to open a window by itself: the job slowed down, or every N steps; each with a cool-down and a cap.

The slowdown rule (`--capture-when slower=R`): the steady median is the median step time of the first
`baseline` steps the trigger sees (steps inside a window are never fed to it: the profiler slows them); a window
is asked for when the median of the last K steps has exceeded R x the steady median for K steps in a row. The
rolling median crosses the line once half of the last K steps are slow, so a lasting slowdown is caught about
1.5 K steps after it began (within 2 K); a burst of slow steps or jitter that lifts the median for a moment is not.
It fires on the rise only: it re-arms once the rolling median is back under the line, so one long slowdown yields
one window, not one per cool-down.
"""

from __future__ import annotations

import collections
import statistics
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class TriggerRule:
    slower: Optional[float] = None  # ratio over the steady median, e.g. 1.3
    every: Optional[int] = None  # a window every N steps
    k: int = 20  # steps in the rolling median
    baseline: int = 50  # steps that make the steady median
    cooldown: int = 200  # steps after a window ends before the next trigger may fire


def parse_when(text: str) -> float:
    """'slower=1.3' -> 1.3; ValueError with the reason otherwise."""
    key, _, value = text.partition("=")
    if key.strip() != "slower":
        raise ValueError(f"--capture-when {text!r}: the one condition is slower=RATIO (e.g. slower=1.3)")
    try:
        ratio = float(value)
    except ValueError:
        raise ValueError(f"--capture-when {text!r}: RATIO must be a number, e.g. slower=1.3") from None
    if not ratio > 1.0 or ratio != ratio or ratio > 1e6:
        raise ValueError(f"--capture-when {text!r}: RATIO must be above 1 (1.3: 30% slower)")
    return ratio


class Trigger:
    """Fed every step time outside windows; says when a window is due and why."""

    def __init__(self, rule: TriggerRule) -> None:
        self.rule = rule
        self.steady_ms: Optional[float] = None
        self._first: list[float] = []
        self._recent: collections.deque[float] = collections.deque(maxlen=max(1, rule.k))
        self._armed = True
        self._quiet_until = -1  # no trigger before this step (cool-down)
        self.rolling_ms: Optional[float] = None
        self._over = 0  # consecutive steps with the rolling median over the line

    def feed(self, step: int, ms: float) -> Optional[str]:
        """The reason a slowdown window is due after this step's time ('slower: ... 1.52x'), else None."""
        return self._slower(step, ms) if self.rule.slower is not None else None

    def every_due(self, step: int) -> Optional[str]:
        """'every N steps' when step `step` is the N-th (a step count alone: every rank agrees), else None."""
        r = self.rule
        if r.every and step > 0 and step % r.every == 0 and step >= self._quiet_until:
            return f"every {r.every} steps"
        return None

    def window_ended(self, step: int, slowdown: bool = False) -> None:
        """A window (of any kind) ended at `step`: cool down, and start the rolling median afresh.

        `slowdown`: it was a slowdown's window (under torchrun perhaps another rank's): this rise is captured,
        so the rule fires again only after the rolling median has been back under the line."""
        self._quiet_until = step + self.rule.cooldown
        self._recent.clear()
        if slowdown:
            self._armed, self._over = False, 0

    def _slower(self, step: int, ms: float) -> Optional[str]:
        r = self.rule
        assert r.slower is not None
        if self.steady_ms is None:
            self._first.append(ms)
            if len(self._first) >= r.baseline:
                self.steady_ms = statistics.median(self._first)
                self._first = []
            return None
        self._recent.append(ms)
        if len(self._recent) < self._recent.maxlen:  # type: ignore[operator]  # maxlen is set above
            return None
        self.rolling_ms = statistics.median(self._recent)
        if self.rolling_ms <= r.slower * self.steady_ms:
            self._armed, self._over = True, 0
            return None
        self._over += 1
        if not self._armed or self._over < r.k or step < self._quiet_until:
            return None
        self._armed = False
        return (
            f"slower: for {r.k} steps the median of the last {r.k}, now {self.rolling_ms:.3g} ms, was over "
            f"{r.slower:g}x the steady {self.steady_ms:.3g} ms ({self.rolling_ms / max(self.steady_ms, 1e-9):.2f}x)"
        )
