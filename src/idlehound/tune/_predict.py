"""The diagnosis' predictions for tune: each candidate's speed-up as the counterfactual replay of the baseline's
profile predicts it (the replay's fixes the candidate makes, analysis._fixes.ALL_FIXES), so that the most promising
candidates run first and each measurement tests the diagnosis."""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from typing import Any, Optional, cast

from ..analysis import ALL_FIXES, Fix, fix_constant_ranges, make_fixes, overhead_at
from ..vocabulary import FixName
from ._candidates import Candidate


class Predictor:
    """Predicted speed-ups from the replay of one profile (none without one: a CPU run has no replay)."""

    def __init__(self, analysis: Any) -> None:
        self.replay = getattr(analysis, "replay", None)
        observer = getattr(analysis, "observer", None) or {}
        self.rate = float(observer.get("host_rate", 1.0))
        self.correction = str(observer.get("correction", "none"))
        self.overhead_ns = tuple(observer.get("overhead_range_ns") or ())  # the correction's range, if any

    @property
    def available(self) -> bool:
        return self.replay is not None and bool(self.replay.steps)

    def _step_ns(self, causes: Sequence[FixName], table: Optional[dict[FixName, Fix]] = None) -> float:
        t = ALL_FIXES if table is None else table
        fix = reduce(Fix.merged, (t[c] for c in dict.fromkeys(causes)), Fix())
        assert self.replay is not None  # callers check `available` first
        # replay comes from getattr (Any here): a Replay, whose play() returns an Outcome with step_ns: float
        return cast(float, self.replay.play(fix, self.rate).step_ns)

    def speedup(self, fixes: Sequence[FixName], below: Sequence[FixName] = ()) -> Optional[float]:
        """The speed-up of making `fixes` on top of `below` (fixes already made), or None without a prediction."""
        if not self.available or not fixes or any(f not in ALL_FIXES for f in (*fixes, *below)):
            return None
        ref, new = self._step_ns(below), self._step_ns((*below, *fixes))
        return round(ref / new, 3) if new > 0 and ref > 0 else None

    def speedup_range(
        self, fixes: Sequence[FixName], below: Sequence[FixName] = ()
    ) -> Optional[tuple[float, float]]:
        """The speed-up's low and high ends over the correction's range and the fix constants' ranges
        (docs/metrics.md, Intervals), or None without a prediction."""
        if self.speedup(fixes, below) is None:
            return None
        assert self.replay is not None
        r = fix_constant_ranges()
        tables = [
            None,
            make_fixes({k: v[0] for k, v in r.items()}),
            make_fixes({k: v[1] for k, v in r.items()}),
        ]
        out = []
        for ns in dict.fromkeys((*self.overhead_ns, self.replay.overhead_ns)):
            with overhead_at(self.replay, float(ns)):
                for t in tables:
                    ref, new = self._step_ns(below, t), self._step_ns((*below, *fixes), t)
                    if new > 0 and ref > 0:
                        out.append(ref / new)
        return (round(min(out), 3), round(max(out), 3)) if out else None

    def ordered(self, cands: list[Candidate], below: Sequence[FixName] = ()) -> list[Candidate]:
        """Largest predicted gain (on top of the fixes `below`) first; candidates without a prediction after, in
        their own order."""
        pred = {c.name: self.speedup(c.fixes, below) for c in cands}
        return sorted(cands, key=lambda c: (0, -p) if (p := pred[c.name]) is not None else (1, 0.0))

    def summary(self) -> dict[str, Any]:
        if not self.available:
            return {"available": False}
        return {
            "available": True,
            "step_ms": round(self._step_ns(()) / 1e6, 3),
            "host_rate": self.rate,
            "correction": self.correction,
        }
