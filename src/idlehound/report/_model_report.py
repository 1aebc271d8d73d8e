"""The analysis report's Structs (schema idlehound/analysis): what `idlehound analyze --json` and report.json hold.

Field order is key order (report/model.py); the report's builder is report/_data.py.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from ._struct import _Doc

# ---- the analysis report (schema idlehound/analysis) ----


class Tool(_Doc):
    name: str
    version: str


class TraceInfo(_Doc):
    path: str
    worker: str
    size_bytes: int
    with_stack: bool
    cuda_run: bool
    gpu_recorded: bool
    step_source: str
    steps: list[Optional[int]]  # null for a step the trace does not number
    workers: list[str]


class Device(_Doc):
    name: str
    index: Optional[int]
    compute_capability: Optional[list[int]]
    memory_bytes: Optional[float]
    devices_seen: list[int]
    accelerator: str


class Metric(_Doc):
    value: Optional[float]
    unit: str
    label: str
    status: str
    ideal: Optional[float]
    problem: Optional[float]
    higher_is_better: bool


class Snippet(_Doc):
    first_line: int
    lines: list[str]


class Location(_Doc, omit_defaults=True):
    file: str
    line: int
    function: str
    exact: bool
    snippet: Optional[Snippet] = None  # absent when capture stored no source


class IdleLine(_Doc):
    cause: str
    location: Optional[Location]
    idle_ms_per_step: Optional[float]
    gaps: int


class Step(_Doc):
    number: Optional[int]
    duration_ms: Optional[float]
    gpu_busy_pct: Optional[float]
    breakdown_ms: dict[str, Optional[float]]
    idle_ms: dict[str, Optional[float]]
    start_ns: int
    end_ns: int
    sync_calls: int


class SyncPoint(_Doc):
    kind: str
    op: str
    call: str
    python: str
    location: Optional[Location]
    count_per_step: Optional[float]
    idle_after_ms_per_step: Optional[float]
    blocked_ms_per_step: Optional[float]


class Copy(_Doc):
    direction: str
    count_per_step: Optional[float]
    mb_per_step: Optional[float]
    ms_per_step: Optional[float]
    bandwidth_gbps: Optional[float]
    pageable_pct: Optional[float]


class KernelFamily(_Doc):
    name: str
    count_per_step: Optional[float]
    ms_per_step: Optional[float]
    precision: Optional[str]


class Kernels(_Doc):
    count_per_step: Optional[float]
    ms_per_step: Optional[float]
    p50_us: Optional[float]
    p90_us: Optional[float]
    max_us: Optional[float]
    fp32_matmul_ms_per_step: Optional[float]
    tensor_core_ms_per_step: Optional[float]
    fp32_matmul_ops: list[str]
    top: list[KernelFamily]


class Memory(_Doc):
    recorded: bool
    peak_allocated_gib: Optional[float]
    peak_reserved_gib: Optional[float]
    capacity_gib: Optional[float]
    allocs_per_step: Optional[float]
    empty_cache_calls: int
    allocator_calls: int
    curve: list[tuple[int, float]]


class DataLoader(_Doc):
    iterator: str
    workers_in_use: Optional[bool]
    host_ms_per_step: Optional[float]
    exposed_ms_per_step: Optional[float]
    location: Optional[Location]


class Timeline(_Doc, omit_defaults=True):
    """Busy spans and idle gaps of the first steps; every key absent when there were no steps."""

    start_ns: Optional[int] = None
    end_ns: Optional[int] = None
    busy: Optional[list[tuple[int, int]]] = None
    gaps: Optional[list[tuple[int, int, str]]] = None


class UtilizationCurve(_Doc):
    source: str
    samples: list[tuple[float, float, Optional[float]]]


class Finding(_Doc):
    cause: str
    title: str
    severity: str
    kind: str
    recoverable_ms_per_step: float
    recoverable_share_of_step: float
    location: Optional[Location]
    evidence: list[str]
    fix: str
    code: str
    details: dict[str, Any]
    # report version 2 (optional in ranks documents): low-high over the correction's uncertainty
    recoverable_ms_range: Optional[tuple[float, float]] = None
    recoverable_share_range: Optional[tuple[float, float]] = None


class Replay(_Doc):
    recorded_step_ms: Optional[float]
    replayed_step_ms: Optional[float]
    unprofiled_step_ms: Optional[float]
    unprofiled_source: Optional[str]
    host_rate: Optional[float]
    predicted_step_ms: Optional[float]
    best_stack: list[str]
    best_stack_step_ms: Optional[float]
    best_stack_gain_ms: Optional[float]
    overhead_us: Optional[float] = None  # the profiler's cost per host event the observer fit took out
    # version 2: which correction ("fitted on this run" / "prior from N calibration loops" / "none"), its range
    correction: str = "none"
    overhead_us_range: Optional[tuple[float, float]] = None
    fit_not_used: Optional[str] = None  # why the run's unprofiled timing was not fitted to
    predicted_step_range_ms: Optional[tuple[float, float]] = None
    best_stack_step_range_ms: Optional[tuple[float, float]] = None
    best_stack_gain_range_ms: Optional[tuple[float, float]] = None


class NotChecked(_Doc):
    """A rule that did not run: the trace lacks the data it needs (docs/metrics.md)."""

    rule: str
    causes: list[str]
    needs: str
    missing: list[str]


Cell = Union[str, int, float, None]


class Section(_Doc):
    """A section added through report/sections.py: a titled table (docs/json-schema.md, `sections`)."""

    title: str
    columns: list[str]
    rows: list[list[Cell]]


class Report(_Doc, omit_defaults=True):
    """`idlehound analyze --json` and every run folder's report.json (docs/json-schema.md). Every key is written
    but `sections`, absent while no section is registered (omit_defaults: the other fields have no default)."""

    schema: Literal["idlehound/analysis"]
    schema_version: Literal[2]
    tool: Tool
    headline: str
    trace: TraceInfo
    device: Device
    metrics: dict[str, Metric]
    breakdown_ms: dict[str, Optional[float]]
    idle_by_cause_ms: dict[str, Optional[float]]
    idle_gaps_per_step: Optional[float]
    idle_by_line: list[IdleLine]
    idle_by_library_line: list[IdleLine]
    steps: list[Step]
    sync_points: list[SyncPoint]
    copies: list[Copy]
    kernels: Kernels
    memory: Memory
    dataloader: DataLoader
    timeline: Timeline
    utilization_curve: Optional[UtilizationCurve]
    findings: list[Finding]
    not_checked: list[NotChecked]
    replay: Optional[Replay]
    notes: list[str]
    run: dict[str, Any]
    sections: dict[str, Section] = {}  # by name, in the order they were registered
