"""The search: which candidates a tune tries (the diagnosis's causes, the script's facts, --try and --skip),
in which order, and the worker counts and stacks it tries after the first results."""

from __future__ import annotations

import os
import re
from typing import Any, Optional

from ..diagnose.dataloader import suggested_workers
from ..vocabulary import Cause, OutcomeStatus
from ._budget import Budget
from ._candidates import (
    FRAMEWORK_FACTS,
    Candidate,
    Outcome,
    not_applicable,
    refine_workers,
    workers_candidate,
)
from ._options import TuneOptions
from ._predict import Predictor
from ._stack import Stack


def choose(
    cands: list[Candidate], causes: set[Cause], base: dict[str, Any], cuda: bool, opts: TuneOptions
) -> tuple[list[Candidate], list[Outcome]]:
    """The candidates to time, and the outcomes of those left out (skipped, or not applicable: with why)."""
    facts = base.get("facts") or {}
    wanted = _wanted(cands, causes, facts, cuda, opts)
    pinning = any(
        c.settings.get("loader", {}).get("pin_memory") and "num_workers" in c.settings["loader"]
        for c in wanted
    )
    chosen, skipped = [], []
    has_loader = bool(base.get("loaders"))
    for c in wanted:
        if c.framework and facts.get(FRAMEWORK_FACTS[c.framework][0]) is None:
            if c.name in opts.try_:  # tried by name: say why not; proposed by a cause: not this script's kind
                skipped.append(_left_out(c, "skipped", FRAMEWORK_FACTS[c.framework][2]))
            continue
        reason = (
            "the script builds no DataLoader"
            if c.needs_loader and not has_loader
            else "needs CUDA"
            if c.needs_cuda and not cuda
            else "every num_workers candidate pins memory already"
            if c.name == "pin_memory" and pinning and c.name not in opts.try_
            else ""
        )
        idle = "" if reason else not_applicable(c, facts)
        if idle:  # would change nothing in this script: not timed, so noise cannot pass for a win
            skipped.append(_left_out(c, "not applicable", idle))
        elif reason:
            skipped.append(_left_out(c, "skipped", reason))
        else:
            chosen.append(c)
    return chosen, skipped


def _wanted(
    cands: list[Candidate], causes: set[Cause], facts: dict[str, Any], cuda: bool, opts: TuneOptions
) -> list[Candidate]:
    """The candidates asked for: by name (--try, which also takes any workersN), else proposed by a diagnosed
    cause or by a fact of the baseline run; less those --skip names. Loader candidates first."""
    known = {c.name for c in cands}
    counts = [re.fullmatch(r"workers([1-9][0-9]*)", t) for t in opts.try_ if t not in known]
    extra = [workers_candidate(int(m.group(1)), cuda) for m in counts if m]
    return [
        c
        for c in _loader_first(cands + extra)
        if c.name not in opts.skip_candidates
        and (
            c.name in opts.try_
            or (not opts.try_ and (bool(causes & set(c.causes)) or bool(c.fact and facts.get(c.fact))))
        )
    ]


def _left_out(c: Candidate, status: OutcomeStatus, reason: str) -> Outcome:
    return Outcome(c.name, c.label, status=status, reason=reason, settings=c.settings)


def predict_untried(skipped: list[Outcome], cands: list[Candidate], predictor: Predictor) -> None:
    """The replay's prediction for candidates left out before any run (over the baseline), so that each
    still tests the diagnosis."""
    fixes = {c.name: c.fixes for c in cands}
    for o in skipped:
        o.predicted = predictor.speedup(fixes.get(o.candidate, ()))


def suggested_first(loader: list[Candidate]) -> list[Candidate]:
    """Loader settings the replay cannot tell apart in the order a cut sweep should keep: the suggested worker
    count first, then the larger ones (headroom for the later stages), then the smaller."""
    best = suggested_workers(os.cpu_count() or 2)

    def key(c: Candidate) -> tuple[int, int]:
        n = c.settings.get("loader", {}).get("num_workers")
        if n is None:
            return (3, 0)
        return (0, 0) if n == best else (1, n) if n > best else (2, -n)

    return sorted(loader, key=key)


def _loader_first(cands: list[Candidate]) -> list[Candidate]:
    return [c for c in cands if c.needs_loader] + [c for c in cands if not c.needs_loader]


def refined(
    stage1: list[Candidate], floor: Optional[tuple[Candidate, Outcome]], cuda: bool
) -> list[Candidate]:
    """Worker counts between the sweep's best and its neighbours (the best is rarely exactly on the grid)."""
    counts = [
        c.settings["loader"]["num_workers"] for c in stage1 if "num_workers" in c.settings.get("loader", {})
    ]
    if floor is None or "num_workers" not in floor[0].settings.get("loader", {}):
        return []
    best = floor[0].settings["loader"]["num_workers"]
    return [workers_candidate(n, cuda) for n in refine_workers(counts, best, os.cpu_count() or 2)]


BUSY_GPU = 80.0  # % GPU busy above which the GPU, not the loader, sets the pace


def on_top(
    lab: Budget, stack: Stack, cand: Candidate, name: str, outcomes: list[Outcome], note: str = ""
) -> Stack:
    """Time cand on top of the stack against the stack's own run, record the outcome, return the stack it leaves."""
    (o,) = lab.experiment(stack if stack.cands else None, [cand], note, [name])
    if not stack.cands:
        o.on_top_of = None
    outcomes.append(o)
    return stack.grown(cand, o)


def more_workers(stack: Stack, stage1: list[Candidate], cuda: bool) -> list[Candidate]:
    """The next larger worker count of the sweep, once more on top of the whole stack, when stage 2 kept
    something and the GPU still waits: the loader was chosen while the host paced the step, and more workers
    that measured slower then may be faster now."""
    loader = [c for c in stack.cands if "num_workers" in c.settings.get("loader", {})]
    util = stack.outcome.gpu_util if stack.outcome else None
    if not loader or len(stack.cands) < 2 or util is None or util >= BUSY_GPU:
        return []
    n = loader[0].settings["loader"]["num_workers"]
    above = [
        c.settings["loader"]["num_workers"]
        for c in stage1
        if c.settings.get("loader", {}).get("num_workers", 0) > n
    ]
    return [workers_candidate(min(above), cuda)] if above else []
