"""The --budget: which experiments of the lab fit in the wall time left, and how many rounds each gets."""

from __future__ import annotations

import math as _math
import time
from typing import Callable, Optional

from ..vocabulary import FixName
from ._candidates import Candidate, Outcome
from ._lab import Lab
from ._stack import Stack
from ._stats import MARGIN

EARLY_ROUNDS = 2  # under --budget: the fewest rounds a candidate is tried with (an interval needs two)


class Budget:
    """The lab's experiments within --budget, at what the runs so far cost (each reference at its own runs' mean
    wall time, a new arm at the mean of all runs).

    A candidate is tried when its fewest rounds (EARLY_ROUNDS: each arm twice, its reference around them), the
    closing reference run and what the end keeps back (the last baseline run when the reference is a stack, the
    changed script's short run) fit in what is left; a sweep that does not fit whole is cut to its most
    promising head. A decided arm leaves after those rounds (_stats.decided); a further round starts only while
    it leaves room for the fewest rounds of each later candidate the replay predicts to gain more than the
    margin, so that the candidates that matter get tried before the undecided ones get more rounds."""

    def __init__(
        self, budget_s: Optional[float], lab: Lab, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.budget_s, self.lab, self.clock = budget_s, lab, clock
        self.t0 = clock()
        self.ref = "baseline"
        # Predicted speed-ups of the later candidates that gain more than the margin: their fewest runs are kept.
        self.later_pred: list[float] = []
        if budget_s is not None:
            lab.sched.early_rounds = min(EARLY_ROUNDS, lab.sched.min_rounds)
            lab.sched.room = self.room

    def left(self) -> float:
        return _math.inf if self.budget_s is None else self.budget_s - (self.clock() - self.t0)

    def cost(self, arm: Optional[str] = None) -> float:
        """Mean wall time of arm's runs so far, or of all runs (a new arm)."""
        xs = (self.lab.run_s_by.get(arm) if arm else None) or self.lab.run_s
        return sum(xs) / len(xs) if xs else 0.0

    def kept_back(self) -> tuple[int, float]:
        """The runs the end needs: the last baseline run (when the reference is not the baseline: a stack), and
        the changed script's check (a short run: at the quickest run's cost)."""
        last = self.ref != "baseline"
        check = min(self.lab.run_s) if self.lab.run_s else 0.0
        return 1 + last, check + (self.cost("baseline") if last else 0.0)

    def need(self, arms: int, rounds: int) -> tuple[int, float]:
        """Runs and seconds to time `arms` new arms for `rounds` rounds against self.ref, the closing reference
        run included (the first round's reference is the run just made when that was the same reference)."""
        runs = self.lab.runs
        refs = rounds + 1 - (1 if runs and runs[-1].arm == self.ref else 0)
        return refs + arms * rounds, refs * self.cost(self.ref) + arms * rounds * self.cost()

    def plan_later(self, cands: list[Candidate], below: tuple[FixName, ...]) -> None:
        """Keep room for the fewest rounds of each of cands the replay predicts to gain more than the margin."""
        pred = [self.lab.predictor.speedup(c.fixes, below) for c in cands]
        self.later_pred = [p for p in pred if p is not None and p >= 1 + MARGIN]

    @property
    def later(self) -> int:
        """Later candidates predicted to gain more than the margin."""
        return len(self.later_pred)

    def ahead(self) -> int:
        """Later candidates a third round must leave room for: those predicted to gain more than the arms now
        timed. On the H200 HF tune (260 s) torch.compile (predicted +32%, 1.51x in two rounds, its interval
        0.76-2.99x) was stopped for four candidates predicted +18-19%, none of which then fitted: the tune
        ended undecided on its most promising candidate."""
        now = [p for p in self.lab.predicted_now() if p is not None]
        if not now:
            return self.later
        return sum(1 for p in self.later_pred if p > max(now))

    def room(self, runs: int, rnd: int) -> bool:
        """Whether the rest of the next round (its reference run has run: runs are those of the arms still timed
        and the closing reference run) fits, with the end's runs kept back; from the third round on, also the
        later candidates'."""
        need = self.cost(self.ref) + (runs - 1) * self.cost() + self.kept_back()[1]
        if rnd < (self.lab.sched.early_rounds or 0):
            return need <= self.left()
        later = self.ahead() * (2 * EARLY_ROUNDS + 1) * self.cost()
        if need <= self.left() < need + later:
            self.lab.held_back = True
        return need + later <= self.left()

    def experiment(
        self,
        stack: Optional[Stack],
        cands: list[Candidate],
        note: str = "",
        names: Optional[list[str]] = None,
    ) -> list[Outcome]:
        names = names or [c.name for c in cands]
        self.ref = stack.outcome.candidate if stack and stack.outcome else "baseline"
        fit = len(cands) if self.budget_s is None else self._fitting(len(cands), self.left())
        done = self.lab.experiment(stack, cands[:fit], note, names[:fit]) if fit else []
        if fit == len(cands):
            return done
        rounds = self.lab.sched.early_rounds or self.lab.sched.min_rounds
        runs = self.need(len(cands) - fit, rounds)[0] + self.kept_back()[0]
        why = f"not tried: {runs} more runs would not fit the --budget of {self.budget_s:g} s"
        below = stack.fixes if stack else ()
        return done + [
            Outcome(
                n,
                c.label + note,
                status="skipped",
                reason=why,
                settings=c.settings,
                on_top_of=stack.name if stack and stack.cands else None,
                predicted=self.lab.predictor.speedup(c.fixes, below),
            )
            for c, n in zip(cands[fit:], names[fit:])
        ]

    def _fitting(self, n: int, left: float) -> int:
        """How many of n candidates (the most promising first) fit in what is left of the budget: a sweep that
        does not fit whole is cut to its head rather than left out. Arms past the head also leave room for the
        fewest rounds of each later candidate predicted to gain more than the margin: on the blog script (H200,
        --budget 240) a second worker count took the time CUDA graphs needed, and the tune stopped at 4x."""
        rounds = self.lab.sched.early_rounds or self.lab.sched.min_rounds
        later = self.later * (2 * EARLY_ROUNDS + 1) * self.cost()
        for k in range(n, 0, -1):
            if self.need(k, rounds)[1] + self.kept_back()[1] + (later if k > 1 else 0.0) <= left:
                return k
        return 0
