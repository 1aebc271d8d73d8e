"""Interleaved, repeated timing of tune variants and their speed-ups with 95% intervals (pure; no processes).

Design: each round runs the reference once and then every arm still being measured in a random order; one more
reference run closes the last round, so every arm's run lies between two reference runs. A run's speed-up is the
reference time interpolated (on the log scale) at the run's position over the run's time: a drift of the machine
across the tune (later processes faster or slower) cancels to first order instead of showing as a speed-up. The
speed-up of an arm is the geometric mean of its runs' speed-ups, with a t-interval on their logs (rounds are
the independent units: runs within one process are correlated).

Under a time budget (early_rounds), an arm may leave after two rounds when its interval (t with one degree of
freedom: 12.7 standard errors wide) is already decided: it excludes 1.0 by the margin, or it excludes being
faster by the margin; the rounds left go to the undecided arms. An arm is still called faster only by its own
interval; the early look is a second look at the data, so a no-op's chance of passing is at most the sum of the
two looks' one-sided 2.5% (far less with the margin: tests/test_tune_budget.py simulates it under drift).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Callable, Optional

MARGIN = 0.03  # an arm is faster (or slower) when its 95% interval excludes 1.0 by this much
TARGET = 0.02  # an arm's interval is tight when its half-width is within 2% of the estimate

# Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom (then 1.96 is close enough).
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


def t975(df: int) -> float:
    return _T975[df - 1] if 1 <= df <= len(_T975) else 1.96


@dataclass(frozen=True)
class Interval:
    """A speed-up as exp(mean) of log ratios, with the standard error of that mean and its degrees of freedom."""

    log_mean: float
    se: float
    df: int

    @property
    def estimate(self) -> float:
        return math.exp(self.log_mean)

    @property
    def low(self) -> float:
        return math.exp(self.log_mean - t975(self.df) * self.se) if self.df > 0 else 0.0

    @property
    def high(self) -> float:
        return math.exp(self.log_mean + t975(self.df) * self.se) if self.df > 0 else math.inf

    def half_width(self) -> float:
        """Relative half-width of the interval (inf with fewer than two rounds)."""
        return math.exp(t975(self.df) * self.se) - 1 if self.df > 0 else math.inf

    def times(self, other: Interval) -> Interval:
        """The product of two independent speed-ups (a gain on top of a stack's own speed-up)."""
        return Interval(self.log_mean + other.log_mean, math.hypot(self.se, other.se), min(self.df, other.df))


def interval(log_ratios: Sequence[float]) -> Optional[Interval]:
    n = len(log_ratios)
    if n == 0:
        return None
    mean = sum(log_ratios) / n
    if n == 1:
        return Interval(mean, math.inf, 0)
    var = sum((x - mean) ** 2 for x in log_ratios) / (n - 1)
    return Interval(mean, math.sqrt(var / n), n - 1)


def effect(iv: Optional[Interval], margin: float = MARGIN) -> str:
    """'faster' or 'slower' when the interval excludes 1.0 by the margin, else 'no measurable effect'."""
    if iv is None:
        return "no measurable effect"
    if iv.low > 1 + margin:
        return "faster"
    if iv.high < 1 / (1 + margin):
        return "slower"
    return "no measurable effect"


@dataclass
class Run:
    arm: str
    position: int  # order in the whole schedule
    ms: Optional[float]  # time per step; None when the run failed


def _interpolated_log(refs: list[Run], position: int) -> Optional[float]:
    """Log reference time at a position, linear between the reference runs around it (nearest at the ends)."""
    ok = [(r.position, math.log(r.ms)) for r in refs if r.ms]
    if not ok:
        return None
    before = [p for p in ok if p[0] < position]
    after = [p for p in ok if p[0] > position]
    if not before or not after:
        return (before[-1] if before else after[0])[1]
    (pa, la), (pb, lb) = before[-1], after[0]
    w = (position - pa) / (pb - pa)
    return (1 - w) * la + w * lb


def log_ratios(runs: list[Run], reference: str, arm: str) -> list[float]:
    """Per run of arm: log(reference time interpolated at its position / its time)."""
    refs = [r for r in runs if r.arm == reference]
    out = []
    for r in runs:
        if r.arm == arm and r.ms:
            ref = _interpolated_log(refs, r.position)
            if ref is not None:
                out.append(ref - math.log(r.ms))
    return out


@dataclass
class Schedule:
    min_rounds: int = 3
    max_rounds: int = 5
    target: float = TARGET
    seed: int = 0
    enough: Optional[Callable[[], bool]] = (
        None  # True: no further round after the first (a time budget is spent)
    )
    early_rounds: Optional[int] = None  # under a budget: a decided arm leaves after this many rounds
    room: Optional[Callable[[int, int], bool]] = (
        None  # (runs the next round takes after its opening reference run, its index) -> whether it fits
    )
    left_early: set[str] = field(default_factory=set)  # arms that left decided before min_rounds


Measure = Callable[[str, int, int], Optional[float]]  # (arm, its run index, schedule position) -> ms or None


def measure_interleaved(
    reference: str, arms: list[str], measure: Measure, sched: Schedule, runs: Optional[list[Run]] = None
) -> list[Run]:
    """Run the reference and the arms in rounds (reference first, arms shuffled), then the reference once more.
    Whether an arm needs another round is judged after the next reference run, the one that opens that round
    or closes the last.

    After min_rounds, an arm leaves when its interval is tight; all stop at max_rounds. An arm whose run fails
    leaves at once (its failure is the result). runs: earlier runs of the same session, which new runs extend
    (their reference runs count too; when the last one is the reference, the first round does not repeat it).
    Returns all runs in schedule order.
    """
    rng = random.Random(sched.seed + len(runs or []))
    runs = runs if runs is not None else []
    pos = runs[-1].position + 1 if runs else 0
    skip_first = bool(runs) and runs[-1].arm == reference
    count: dict[str, int] = {}
    for r in runs:
        count[r.arm] = count.get(r.arm, 0) + 1
    active = list(arms)

    def one(arm: str) -> Run:
        nonlocal pos
        r = Run(arm, pos, measure(arm, count.get(arm, 0), pos))
        count[arm] = count.get(arm, 0) + 1
        pos += 1
        runs.append(r)
        return r

    for rnd in range(sched.max_rounds + 1):
        if not (rnd == 0 and skip_first):
            one(reference)  # opens this round and closes the last: every arm run so far lies between two
        active = _still_open(runs, reference, active, sched, rnd)
        if not active or rnd == sched.max_rounds or (rnd >= 1 and not _fits(sched, rnd, len(active) + 1)):
            break  # done, or the time budget is spent (then even before min_rounds: the intervals say how little)
        order = active[:]
        rng.shuffle(order)
        for arm in order:
            if one(arm).ms is None:
                active.remove(arm)
    return runs


def _still_open(runs: list[Run], reference: str, active: list[str], sched: Schedule, done: int) -> list[str]:
    """The arms that need another round after `done` rounds, judged once their last run has a reference run
    after it (an arm run judged before the closing reference run is compared with the nearest reference only,
    and a drift then passes for a decision: the H200 blog tune called CUDA graphs decided at 2 rounds, and its
    interval once bracketed was 0.8-4x)."""
    if sched.early_rounds is not None and done >= sched.early_rounds:
        decided_now = [a for a in active if decided(interval(log_ratios(runs, reference, a)))]
        if done < sched.min_rounds:
            sched.left_early.update(decided_now)
        active = [a for a in active if a not in decided_now]
    if done >= sched.min_rounds:
        active = [a for a in active if not _tight(runs, reference, a, sched.target)]
    return active


def _fits(sched: Schedule, rnd: int, runs: int) -> bool:
    if sched.enough is not None and sched.enough():
        return False
    return sched.room is None or sched.room(runs, rnd)


def decided(iv: Optional[Interval], margin: float = MARGIN) -> bool:
    """The interval (of at least two rounds) excludes 1.0 by the margin, or excludes being faster by it: more
    rounds would not be needed to call it faster, nor could they make it so at 95%."""
    return iv is not None and iv.df > 0 and (iv.low > 1 + margin or iv.high < 1 + margin)


def _tight(runs: list[Run], reference: str, arm: str, target: float) -> bool:
    iv = interval(log_ratios(runs, reference, arm))
    return iv is not None and iv.half_width() <= target


def drift_pct(runs: list[Run], reference: str) -> Optional[float]:
    """Last reference run's time over the first's, in % (negative: the machine got faster during the tune)."""
    refs = [r.ms for r in runs if r.arm == reference and r.ms]
    if len(refs) < 2:
        return None
    return round(100 * (refs[-1] / refs[0] - 1), 2)


def mean_ms(runs: list[Run], arm: str) -> Optional[float]:
    ms = [r.ms for r in runs if r.arm == arm and r.ms]
    return math.exp(sum(map(math.log, ms)) / len(ms)) if ms else None
