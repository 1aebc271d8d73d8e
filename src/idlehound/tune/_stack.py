"""The stack of changes kept so far, and which outcomes count as a win."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..vocabulary import FixName
from ._candidates import Candidate, Outcome


def helped(o: Optional[Outcome]) -> bool:
    """Ran, kept the math, and its 95% interval over its reference excludes 1.0 by the margin."""
    return o is not None and o.status == "ok" and o.effect == "faster"


def is_win(o: Outcome) -> bool:
    """Kept the math, measurably faster than its own reference (the stack below it, for a change on top) and
    than the baseline: a change that is not faster is never the best."""
    low = (o.speedup_ci or [0.0])[0]
    return helped(o) and (o.speedup or 0) > 1.0 and low > 1.0


def best(
    stage: list[Candidate], outcomes: list[Outcome], tie: float = 0.03
) -> Optional[tuple[Candidate, Outcome]]:
    """The fastest candidate of a stage that measured faster than the baseline, with its outcome. Among loader settings
    within `tie` of the fastest, the one with the most workers: while something else bounds the step they
    measure alike, and the later stages need the loader's headroom."""
    by = {o.candidate: o for o in outcomes}
    good = [(c, by[c.name]) for c in stage if helped(by.get(c.name))]
    if not good:
        return None
    top = max(o.speedup or 0.0 for _, o in good)  # a candidate that helped has a speed-up
    near = [co for co in good if (co[1].speedup or 0.0) >= top * (1 - tie)]
    return max(near, key=lambda co: (co[0].settings.get("loader", {}).get("num_workers", 0), co[1].speedup))


def _merge(*settings: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for s in settings:
        for k, v in s.items():
            out[k] = {**out.get(k, {}), **v} if isinstance(v, dict) else v
    return out


@dataclass(frozen=True)
class Stack:
    """The changes kept so far and the run that measured them together."""

    cands: tuple[Candidate, ...] = ()
    outcome: Optional[Outcome] = None

    @classmethod
    def start(cls, floor: Optional[tuple[Candidate, Outcome]]) -> Stack:
        return cls((floor[0],), floor[1]) if floor else cls()

    @property
    def name(self) -> str:
        return " + ".join(c.name for c in self.cands)

    @property
    def fixes(self) -> tuple[FixName, ...]:
        """The replay's fixes the stack makes: the reference its candidates' predictions are made over."""
        return tuple(f for c in self.cands for f in c.fixes)

    def plus(self, cand: Candidate) -> tuple[dict[str, Any], str]:
        """Settings and loss check for cand on top of the stack (a loader candidate replaces the stack's)."""
        cands = (*self._without(cand), cand)
        math = "precision" if any(c.math == "precision" for c in cands) else "same"
        return _merge(*(c.settings for c in cands)), math

    def grown(self, cand: Candidate, o: Outcome) -> Stack:
        """The stack with cand when its run kept the math and measured faster than the stack's own run."""
        return Stack((*self._without(cand), cand), o) if helped(o) else self

    def _without(self, cand: Candidate) -> tuple[Candidate, ...]:
        return tuple(
            c
            for c in self.cands
            if not (c.needs_loader and cand.needs_loader) and not (c.group and c.group == cand.group)
        )
