"""Diagnosis: one small rule per cause; each reads an Analysis and returns Findings.

diagnose() runs them all, sets each one's recoverable time to the gain the replay predicts for its fix,
drops findings that would give back too little, and ranks the rest by that gain.
"""

from __future__ import annotations

from typing import Callable, Optional

from ..analysis import Analysis
from . import copies, cudnn, dataloader, host, launch, memory, precision, sync
from ._finding import DEFAULT, Finding, Thresholds, grade
from ._predict import predict
from .frameworks import annotate as _framework_fixes

Rule = Callable[[Analysis, Thresholds], list[Finding]]
RULES: dict[str, Rule] = {
    "data_loading": dataloader.check,
    "sync": sync.check,
    "pageable_copy": copies.check,
    "launch_bound": launch.check,
    "host_bound": host.check,
    "fp32_math": precision.check,
    "cudnn_benchmark": cudnn.check,
    "memory": memory.check,
}


def diagnose(a: Analysis, thresholds: Optional[Thresholds] = None) -> list[Finding]:
    """Findings that explain real lost time in this analysis, most recoverable first."""
    t = thresholds or DEFAULT
    found = [f for rule in RULES.values() for f in rule(a, t)]
    a.prediction = predict(a, found)
    out = [g for g in (grade(f, t) for f in found) if g is not None]
    out = _framework_fixes(a, out)
    out.sort(key=lambda f: (f.kind == "risk", -f.recoverable_ms))
    return out


__all__ = ["DEFAULT", "RULES", "Finding", "Thresholds", "diagnose"]
