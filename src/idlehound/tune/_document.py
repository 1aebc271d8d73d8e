"""The tune document (schema idlehound/tune): every variant's outcome, the best, and its diff, checked to run."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Optional

from ..report import model as m
from ..vocabulary import Cause
from ._candidates import Outcome
from ._diff import changed_source, make_diff
from ._options import TuneOptions
from ._stack import is_win
from ._stats import MARGIN


def document(
    script: str,
    opts: TuneOptions,
    causes: set[Cause],
    outcomes: list[Outcome],
    run_dir: Path,
    noise: dict[str, Optional[float]],
    drift: Optional[float] = None,
    check: Optional[Callable[[str], str]] = None,
    prediction: Optional[dict[str, Any]] = None,
) -> m.Tune:
    """The tune document. check(changed source) -> "" when the changed script runs, else why not."""
    best = max((o for o in outcomes[1:] if is_win(o)), key=lambda o: o.speedup or 0, default=None)
    diff, snippets, checked = _checked_diff(script, best, check) if best is not None else ("", [], "")
    return m.Tune(
        schema="idlehound/tune",
        schema_version=3,
        script=script,
        run_dir=str(run_dir),
        steps=opts.steps,
        skip=opts.skip,
        diagnosed_causes=sorted(causes),
        prediction=prediction or {"available": False},
        budget_s=opts.budget_s,
        noise=m.Noise(**noise),
        drift_pct=drift,
        rounds=[opts.min_rounds, opts.max_rounds],
        margin=MARGIN,
        variants=[m.Variant(**asdict(o)) for o in outcomes],
        best=m.Variant(**asdict(best)) if best else None,
        diff=diff,
        snippets=snippets,
        diff_check=checked,
    )


def _checked_diff(
    script: str, best: Outcome, check: Optional[Callable[[str], str]]
) -> tuple[str, list[str], str]:
    """(the best variant's diff, its snippets, what running the changed script showed). A diff that does not
    run is never shown: what it would change, to apply by hand, and why it is not shown."""
    diff, snippets = make_diff(Path(script), best.settings, best.graphed_inputs)
    if not diff or check is None:
        return diff, snippets, ""
    new, _ = changed_source(Path(script).read_text(encoding="utf-8"), best.settings, best.graphed_inputs)
    why = check(new)
    if not why:
        return diff, snippets, "ran: the changed script built its loader and trained"
    added = [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    snippets = [
        f"# idlehound tune: the diff was not shown: the changed script {why}.\n"
        "# The changes it made, to apply by hand:\n" + "\n".join(added)
    ] + snippets
    return "", snippets, f"failed: {why}"
