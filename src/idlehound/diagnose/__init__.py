"""Diagnosis: one small rule per cause; each reads an Analysis and returns Findings.

diagnose() runs every rule whose data the trace holds (the others are listed in `Diagnosis.not_checked`),
sets each finding's recoverable time to the gain the replay predicts for its fix, lets the refining rules phrase
fixes as a framework's settings, drops findings that would give back too little (Thresholds), and ranks the rest
by that gain.
"""

from __future__ import annotations

from typing import Optional

from ..analysis import Analysis
from . import copies, cudnn, dataloader, frameworks, host, launch, memory, precision, sync
from ._finding import DEFAULT, Diagnosis, Finding, Thresholds, clears_bar, grade
from ._predict import predict, replay_fix
from ._registry import (
    CAUSES,
    IDLE_CAUSE_DEFINITIONS,
    IDLE_CAUSE_INFO,
    IDLE_CAUSE_LABELS,
    Cause,
    IdleCause,
    Kind,
    Severity,
)
from ._rule import Need, Rule

# Finding rules, then the rules that refine their findings (frameworks: phrase the fix as the framework's setting).
RULES: dict[str, Rule] = {
    r.name: r
    for r in [
        dataloader.RULE,
        sync.RULE,
        copies.RULE,
        launch.RULE,
        host.RULE,
        precision.RULE,
        cudnn.RULE,
        memory.CHURN_RULE,
        memory.NEAR_OOM_RULE,
        frameworks.RULE,
    ]
}


def diagnose(a: Analysis, thresholds: Optional[Thresholds] = None) -> Diagnosis:
    """Findings that explain real lost time in this analysis, most recoverable first, with the replay's best
    stack of fixes and the rules that could not look. Reads the analysis; changes nothing in it."""
    t = thresholds or DEFAULT
    not_checked = tuple(nc for nc in (r.not_checked(a) for r in RULES.values()) if nc is not None)
    prediction, found = predict(a, [f for r in RULES.values() for f in r.report(a, t)])
    for r in RULES.values():  # before grading: a framework-named cause has its own, lower bar
        if r.refine is not None and not r.skip(a):
            found = r.refine(a, found)
    out = [g for g in (grade(f, t) for f in found) if g is not None]
    out.sort(key=lambda f: (f.kind == Kind.RISK, -f.range_ms[0], -f.recoverable_ms))  # by the range's low end
    return Diagnosis(tuple(out), prediction, not_checked)


__all__ = [
    "CAUSES",
    "DEFAULT",
    "IDLE_CAUSE_DEFINITIONS",
    "IDLE_CAUSE_INFO",
    "IDLE_CAUSE_LABELS",
    "IdleCause",
    "RULES",
    "Cause",
    "Diagnosis",
    "Finding",
    "Kind",
    "Need",
    "Rule",
    "Severity",
    "Thresholds",
    "clears_bar",
    "diagnose",
    "replay_fix",
]
