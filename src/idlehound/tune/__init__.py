"""`idlehound tune`: apply the fixes to an unmodified script, measure each side by side, check the math.

Every variant runs in its own process (no cudnn cache, compiled code or worker processes leak between them),
with the same seeds, for the same number of steps after the same warm-up, in rounds interleaved with its
reference (_stats): a speed-up comes with a 95% interval, and only one whose interval clears 1.0 by the margin is
accepted. Each variant's per-step losses are compared with the baseline's: exactly (changes that must not alter
the math, such as loader workers) or within a tolerance (precision changes). Crashing variants fail and variants
that change the math are rejected, with the reason; candidates that would change nothing are not applicable.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import IdlehoundError
from ..report import render_tune, set_candidate_names, tune_html, tune_markdown, write
from ..report.model import Tune
from ..vocabulary import Cause
from ._budget import Budget
from ._candidates import Candidate, Outcome, all_candidates
from ._document import document as _document
from ._lab import Lab
from ._losses import check_losses
from ._options import Progress, TuneOptions
from ._runner import diagnosed_causes as _diagnosed_causes  # run_tune's seams: a test may replace them
from ._runner import run_child as _run_child
from ._runner import runs_changed
from ._search import choose as _choose
from ._search import more_workers as _more_workers
from ._search import on_top, predict_untried, refined, suggested_first
from ._stack import Stack as _Stack
from ._stack import best as _best


def candidate_names() -> list[str]:
    """Every candidate's name, what `--try` takes (the tune document's renderers list them)."""
    return [c.name for c in all_candidates(16, cuda=True)]


set_candidate_names(candidate_names)


def print_progress(message: str, done: int, total: int) -> None:
    """One line per child run, counted "run 3 of ~12" (the plan grows when an interval needs more rounds);
    the steps between runs (diagnosing, checking the diff) without a count."""
    if total and done >= total:
        return
    if not _RUN_MESSAGE.search(message):
        sys.stderr.write(f"idlehound tune: {message}\n")
        return
    count = f"run {done + 1}" + (f" of ~{total}" if total else "")
    sys.stderr.write(f"idlehound tune: [{count}] {message}\n")


_RUN_MESSAGE = re.compile(r"\(run \d+\)$")  # what Lab._measure says as each child run starts


def _Budget(budget_s: float | None, lab: Any) -> Budget:
    """The --budget on this module's clock (time.monotonic; the budget tests put a simulated one here)."""
    return Budget(budget_s, lab, clock=time.monotonic)


def _runs_changed(script: str, args: list[str], opts: TuneOptions, run_dir: Path, new: str) -> str:
    """ "" when the changed script runs a few optimizer steps (and builds its loaders on both sides of an
    accelerator branch); else what went wrong. Through this module's child runner."""
    return runs_changed(script, args, opts, run_dir, new, runner=_run_child)


def run_tune(script: str, args: list[str], opts: TuneOptions, progress: Progress = print_progress) -> Tune:
    """Tune script; returns the tune document (schema idlehound/tune, version 3) and writes it to a run folder.

    Stage 1 times the loader candidates on the script as written. Stage 2 times the others one at a time on top
    of a stack that starts as the best loader setting, because a change that makes the GPU faster cannot show
    while it waits for data or for the host: each one measurably faster than the stack joins it, so the last to
    join was measured with everything kept, and that run is the combination. Every comparison interleaves the
    arms with their reference in rounds (_stats) and reports a 95% interval.
    """
    from ..runfolder import document_files, new_run_dir

    if not Path(script).is_file():
        raise IdlehoundError(f"{script}: no such script")
    import torch

    cuda = torch.cuda.is_available()
    run_dir = new_run_dir(Path(opts.logdir), f"tune-{Path(script).stem}")
    lab = Lab(script, args, opts, run_dir, cuda, progress, runner=_run_child, clock=time.monotonic)
    clock = _Budget(opts.budget_s, lab)
    causes, chosen, skipped = _start(lab, script, args, opts)
    outcomes = skipped + _stages(lab, clock, chosen)
    lab.last_baseline()
    progress("checking that the changed script runs", lab.done, lab.done + 1)
    doc = _document(
        script,
        opts,
        causes,
        [lab.baseline_outcome()] + outcomes,
        run_dir,
        lab.noise(),
        lab.drift(),
        lambda new: _runs_changed(script, args, opts, run_dir, new),
        lab.predictor.summary(),
    )
    doc.wall_s = round(time.monotonic() - clock.t0, 1)
    progress("done", lab.done + 1, lab.done + 1)
    for path in document_files(run_dir, "tune"):
        write(doc, path, force=True)
    return doc


def _start(
    lab: Lab, script: str, args: list[str], opts: TuneOptions
) -> tuple[set[Cause], list[Candidate], list[Outcome]]:
    """The baseline runs and the diagnosis: the causes found, the candidates to time and those left out."""
    lab.progress(f"baseline ({opts.skip} warm-up + {opts.steps} timed steps)", 0, 0)
    first = lab.first_baseline()
    if first["status"] != "ok":
        raise IdlehoundError(
            f"{script}: the unmodified script did not complete its warm-up and "
            f"{opts.steps} timed optimizer steps ({first['error'] or first['status']})"
        )
    causes: set[Cause] = set()
    if opts.diagnose:
        lab.progress("diagnosing the baseline (short profile)", lab.done, 0)
        causes, lab.predictor = _diagnosed_causes(script, args, opts, lab.run_dir)
    cands = all_candidates(os.cpu_count() or 2, lab.cuda)
    chosen, skipped = _choose(cands, causes, first, lab.cuda, opts)
    predict_untried(skipped, cands, lab.predictor)
    return causes, chosen, skipped


def _stages(lab: Lab, clock: Budget, chosen: list[Candidate]) -> list[Outcome]:
    """Stage 1 (the loader sweep, refined when there is no --budget), then stage 2 on top of its best."""
    stage1 = [c for c in chosen if c.needs_loader]
    stage1 = lab.predictor.ordered(
        suggested_first(stage1) if lab.opts.budget_s else stage1
    )  # a cut keeps the head
    below = stage1[0].fixes if stage1 else ()  # stage 2 runs on top of the loader, once one helps
    stage2 = lab.predictor.ordered([c for c in chosen if not c.needs_loader], below)
    lab.plan(len(stage1), len(stage2))
    clock.plan_later(stage2, below)
    outcomes = clock.experiment(None, stage1)
    floor = _best(stage1, outcomes)
    extra = refined(stage1, floor, lab.cuda) if lab.opts.budget_s is None else []  # a budget: stage 2 first
    lab.plan(len(extra), len(stage2))
    outcomes += clock.experiment(None, extra, " (refining the sweep)")
    stage1 += extra
    return outcomes + _stacked(lab, clock, stage1, _best(stage1, outcomes), stage2)


def _stacked(
    lab: Lab, clock: Budget, stage1: list[Candidate], floor: Any, stage2: list[Candidate]
) -> list[Outcome]:
    """Stage 2: each candidate on top of the stack of those kept so far; then more workers on the whole stack."""
    outcomes: list[Outcome] = []
    stack = _Stack.start(floor)
    for i, cand in enumerate(stage2):
        lab.plan(1, len(stage2) - i - 1)
        clock.plan_later(stage2[i + 1 :], (*stack.fixes, *cand.fixes))
        stack = on_top(clock, stack, cand, cand.name, outcomes)
    for cand in _more_workers(stack, stage1, lab.cuda):
        lab.plan(1, 0)
        clock.later_pred = []
        stack = on_top(clock, stack, cand, cand.name + "_on_stack", outcomes, " (again)")
    return outcomes


__all__ = [
    "Progress",
    "TuneOptions",
    "print_progress",
    "check_losses",
    "render_tune",
    "run_tune",
    "tune_html",
    "tune_markdown",
]
