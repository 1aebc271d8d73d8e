"""The Finding record and the thresholds every rule shares."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Optional, Union, overload

from ..analysis import FP32_SPEEDUP, OBSERVER_RATE, PAGEABLE_SPEEDUP, Analysis, SourceLoc
from ..vocabulary import Cause, Kind, Severity
from ._registry import CAUSES


@dataclass(frozen=True)
class Thresholds:
    """When a cause is worth reporting. (The metrics' ideal/problem bands are in metrics.METRICS.)"""

    min_share: float = 0.05  # recoverable time must be at least this share of the step...
    min_ms: float = 0.02  # ...and at least this many ms per step
    # ...or this share when a framework entry names the library call and its one-setting fix: the cause is then
    # known exactly, not inferred (Lightning's per-step prog_bar read: 3.9% predicted, 5.6% measured on an H200)
    framework_min_share: float = 0.02
    high_share: float = 0.30
    medium_share: float = 0.10
    conv_share_for_cudnn: float = (
        0.20  # cudnn.benchmark advice only when convolutions are this much of a step
    )
    near_oom_share: float = 0.90
    fp32_speedup: float = FP32_SPEEDUP  # TF32 or bf16 on tensor cores vs fp32 CUDA-core GEMM (the replay's)
    pageable_speedup: float = PAGEABLE_SPEEDUP  # pinned vs pageable host-to-device bandwidth (the replay's)
    observer_rate: float = (
        OBSERVER_RATE  # evidence notes the observer when the fitted host rate is below this
    )


DEFAULT = Thresholds()


@dataclass(frozen=True)
class Finding:
    """One cause of lost GPU time, with the evidence for it and what to change. Frozen: the steps after a rule
    (the replay's prediction, the framework refinements, grading) return new findings."""

    cause: Cause
    title: str
    recoverable_ms: float  # per step, estimated
    step_ms: float
    evidence: tuple[str, ...]
    fix: str
    code: str = ""
    location: Optional[SourceLoc] = None
    severity: Union[Severity, Literal[""]] = ""  # set by grade()
    kind: Kind = Kind.IDLE  # IDLE: explains idle time; SLOW: slow GPU work; RISK: no time lost yet
    details: Mapping[str, Any] = field(default_factory=dict)
    basis_ms: Optional[float] = None  # for "slow" findings: the measured time the estimate is taken from
    # The replay's range over the correction's and the fix constants' uncertainty (docs/metrics.md, Intervals);
    # None: no replay, the point figure is both ends.
    recoverable_range_ms: Optional[tuple[float, float]] = None
    share_range: Optional[tuple[float, float]] = None

    @property
    def share(self) -> float:
        return self.recoverable_ms / self.step_ms if self.step_ms > 0 else 0.0

    @property
    def range_ms(self) -> tuple[float, float]:
        return self.recoverable_range_ms or (self.recoverable_ms, self.recoverable_ms)

    @property
    def share_ends(self) -> tuple[float, float]:
        return self.share_range or (self.share, self.share)


def finding(
    cause: Cause,
    a: Analysis,
    recoverable_ms: float,
    evidence: Iterable[str],
    code: str,
    *,
    title: Optional[str] = None,
    fix: Optional[str] = None,
    location: Optional[SourceLoc] = None,
    details: Optional[Mapping[str, Any]] = None,
    basis_ms: Optional[float] = None,
) -> Finding:
    """A rule's finding for `cause` in this analysis: the registry's title, fix and kind unless the rule phrases
    a more specific title or fix from what the trace shows."""
    info = CAUSES[cause]
    return Finding(
        cause,
        info.title if title is None else title,
        recoverable_ms,
        a.step_ms,
        tuple(evidence),
        info.fix if fix is None else fix,
        code,
        location=location,
        kind=info.kind,
        details={} if details is None else details,
        basis_ms=basis_ms,
    )


@dataclass(frozen=True)
class Diagnosis:
    """What diagnose() found in one analysis: the ranked findings, the replay's best stack of fixes, and the
    rules that could not look (their data is missing from the trace). Iterating it iterates the findings, so code
    written when diagnose() returned a list keeps working."""

    findings: tuple[Finding, ...] = ()
    prediction: Mapping[str, Any] = field(default_factory=dict)  # empty without a replay
    not_checked: tuple[Mapping[str, Any], ...] = ()  # Rule.not_checked() entries

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.findings)

    def __len__(self) -> int:
        return len(self.findings)

    @overload
    def __getitem__(self, i: int) -> Finding: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[Finding, ...]: ...
    def __getitem__(self, i: Union[int, slice]) -> Union[Finding, tuple[Finding, ...]]:
        return self.findings[i]

    def __bool__(self) -> bool:
        return bool(self.findings)


def grade(f: Finding, t: Thresholds) -> Optional[Finding]:
    """The finding with its severity, or None when it explains too little to matter."""
    if f.kind == Kind.RISK:
        return replace(f, severity=Severity.MEDIUM)
    basis = f.basis_ms if f.basis_ms is not None else f.recoverable_ms
    bar = t.framework_min_share if f.details.get("framework") else t.min_share
    if f.recoverable_ms < t.min_ms or (basis / f.step_ms if f.step_ms > 0 else 0.0) < bar:
        return None
    severity = (
        Severity.HIGH
        if f.share >= t.high_share
        else Severity.MEDIUM
        if f.share >= t.medium_share
        else Severity.LOW
    )
    return replace(f, severity=severity)


def clears_bar(f: Finding, t: Thresholds) -> bool:
    """Whether the low end of the finding's range clears its reporting bar: a headline may name its fix."""
    bar = t.framework_min_share if f.details.get("framework") else t.min_share
    return f.kind != Kind.RISK and f.share_ends[0] >= bar and f.range_ms[0] >= t.min_ms


def ms(a: Analysis, ns: float) -> float:
    return a.per_step_ms(ns)


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"
