"""The typed model of every output document: msgspec Structs, the one rounding helper, the JSON encoder.

Builders return these Structs and every renderer reads them (report.write picks the renderer by the Struct's
type); their JSON text comes from `encode`. docs/schema/<name>.schema.json is generated from them
(`python -m idlehound.report.schema`). A Struct's field order is the document's key order, so the JSON text
stays what it was when documents were dicts. The analysis report's Structs are in _model_report.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal, Optional, TypeVar, Union

import msgspec

from ._model_report import (
    Cell,
    Copy,
    DataLoader,
    Device,
    Finding,
    IdleLine,
    KernelFamily,
    Kernels,
    Location,
    Memory,
    Metric,
    NotChecked,
    Replay,
    Report,
    Section,
    Snippet,
    Step,
    SyncPoint,
    Timeline,
    Tool,
    TraceInfo,
    UtilizationCurve,
)
from ._struct import MS, PCT, SHARE, _Doc, rnd

# ---- idlehound compare (schema idlehound/compare) ----


class CompareSide(_Doc):
    path: str
    headline: str


class CompareRow(_Doc):
    label: str
    a: Optional[float]
    b: Optional[float]
    delta: Optional[float]
    delta_pct: Optional[float]
    unit: str


class FindingBrief(_Doc):
    cause: str
    title: str
    ms: float


class FindingUnchecked(_Doc):
    """A finding of one side whose rule the other side could not run: neither gone nor new."""

    cause: str
    title: str
    ms: float
    in_: str = msgspec.field(name="in")
    not_checked_in: str = ""


class FindingKept(_Doc):
    cause: str
    title: str
    a_ms: float
    b_ms: float


class Compare(_Doc):
    schema: Literal["idlehound/compare"]
    schema_version: Literal[1]
    a: CompareSide
    b: CompareSide
    metrics: list[CompareRow]
    breakdown_ms: list[CompareRow]
    idle_by_cause_ms: list[CompareRow]
    kernels_ms: list[CompareRow]
    memory: list[CompareRow]
    findings_gone: list[FindingBrief]
    findings_new: list[FindingBrief]
    findings_unchecked: list[FindingUnchecked]
    findings_kept: list[FindingKept]


# ---- several ranks (schema idlehound/distributed) ----


class RankRow(_Doc):
    rank: Any  # rank, world size and backend: whatever the trace's metadata gives
    step_ms: float
    gpu_util: Optional[float]
    comm_ms: float
    exposed_comm_ms: float
    overlapped_comm_ms: float
    compute_ms: float
    trace: str
    top_finding: str
    wait_ms: float = 0.0  # set once every rank's communication time is known
    steps_ms: list[float] = msgspec.field(default_factory=list)  # each step's time (the heatmap's row)


class WhyLine(_Doc):
    file: str
    line: int
    function: str
    ms_per_step: float
    others_ms_per_step: float
    excess_ms_per_step: float


class Straggler(_Doc):
    rank: Any
    excess_ms_per_step: float
    why_lines: list[WhyLine]
    findings: list[Finding]
    trace: str


class Histogram(_Doc):
    edges: list[float]  # bin edges, one more than counts; the last bin includes its right edge
    counts: list[int]


class StragglerRow(_Doc):
    rank: Any
    step_ms: float
    compute_ms: float
    excess_ms_per_step: float  # work per step above the median rank's
    top_finding: str
    trace: str
    why: Optional[WhyLine] = None  # the user line with the most excess time against the other ranks' median


class CollectiveWait(_Doc):
    name: str
    ranks: int  # ranks that ran it in their steps
    median_ms_per_step: float
    max_ms_per_step: float
    wait_ms_per_step: float  # median over ranks of (the rank's time in it - the least any rank spent)
    min_ms_per_step: float  # the least any rank spent in it: the last to arrive, whom the others wait for


class Ranks(_Doc):
    schema: Literal["idlehound/distributed"]
    schema_version: Literal[1]
    headline: str
    world_size: Any
    backend: Any
    ranks_compared: int
    ranks: list[RankRow]
    straggler: Optional[Straggler]
    failed: list[str] = msgspec.field(default_factory=list)
    step_ms_histogram: Optional[Histogram] = None  # across ranks
    idle_pct_histogram: Optional[Histogram] = None  # 100 - gpu_util across ranks; None without GPU events
    stragglers: list[StragglerRow] = msgspec.field(default_factory=list)  # top k by work per step
    collectives: list[CollectiveWait] = msgspec.field(default_factory=list)  # most waited-in first, top k


# ---- idlehound lint --json (schema idlehound/lint) ----


class LintRow(_Doc):
    rule: str
    name: str
    file: str
    line: int
    col: int
    code: str
    why: str
    fix: str
    measured_idle_ms_per_step: Optional[float]


class Lint(_Doc):
    schema: Literal["idlehound/lint"]
    schema_version: Literal[1]
    findings: list[LintRow]


# ---- idlehound ladder (schema idlehound/ladder) ----


class Rung(_Doc):
    name: str
    label: str
    config: dict[str, Any]
    samples_per_s: Optional[float]
    ms_per_step: Optional[float]
    gpu_busy_pct: Optional[float]
    nvml_util: Optional[float]
    peak_mem_gib: Optional[float]
    speedup: Optional[float]
    pct_of_ceiling: Optional[float]
    top_finding: str
    status: str
    reason: str
    tried: list[dict[str, Any]]
    trace: str
    change: str = ""  # what the rung changes on top of the best so far (absent in earlier ladder.json)


class Ladder(_Doc):
    schema: Literal["idlehound/ladder"]
    schema_version: Literal[1]
    device: str
    rungs: list[Rung]
    best: Optional[str]


# ---- idlehound tune (schema idlehound/tune) ----


class Variant(_Doc):
    candidate: str
    label: str
    status: str
    reason: str
    samples_per_s: Optional[float]
    steps_per_s: Optional[float]
    speedup: Optional[float]
    gpu_util: Optional[float]
    loss_check: str
    max_rel_diff: Optional[float]
    on_top_of: Optional[str]
    gain: Optional[float]
    settings: dict[str, Any]
    graphed_inputs: Optional[list[dict[str, Any]]]
    # version 2 (defaults let a version-1 document be read)
    effect: str = ""
    speedup_ci: Optional[list[float]] = None
    gain_ci: Optional[list[float]] = None
    rounds: int = 0
    warmup_note: str = ""
    # version 3
    predicted: Optional[float] = None  # the replay's speed-up over the same reference as gain/speedup


class Noise(_Doc):
    time_pct: Optional[float] = None
    loss_rel_diff: Optional[float] = None


class Tune(_Doc, kw_only=True):
    """Keys in the document's order; the keys of later versions have defaults so earlier documents can be read."""

    schema: Literal["idlehound/tune"]
    schema_version: Literal[1, 2, 3]
    script: str
    run_dir: str
    steps: int
    skip: int
    diagnosed_causes: list[str]
    prediction: dict[str, Any] = {}  # version 3: the replay the candidates were ordered by
    budget_s: Optional[float] = None  # version 3
    noise: Noise
    drift_pct: Optional[float] = None
    rounds: Optional[list[int]] = None
    margin: Optional[float] = None
    variants: list[Variant]
    best: Optional[Variant]
    diff: str
    snippets: list[str]
    diff_check: str = ""
    wall_s: Optional[float] = None  # version 3: the whole tune's wall time


DOCUMENTS: dict[str, type[_Doc]] = {
    "report": Report,
    "compare": Compare,
    "ranks": Ranks,
    "lint": Lint,
    "ladder": Ladder,
    "tune": Tune,
}


D = TypeVar("D", bound=_Doc)


def typed(doc: Union[D, Mapping[str, Any]], kind: type[D]) -> D:
    """A document as its Struct: a Struct as it is; plain data (a JSON document read back, the Python API's
    `Result.doc`) converted, strictly (a wrong type or an unknown key raises msgspec.ValidationError)."""
    return doc if isinstance(doc, kind) else msgspec.convert(doc, kind)


_BY_SCHEMA: dict[str, type[Document]] = {
    "idlehound/analysis": Report,
    "idlehound/compare": Compare,
    "idlehound/distributed": Ranks,
    "idlehound/lint": Lint,
    "idlehound/ladder": Ladder,
    "idlehound/tune": Tune,
}


Document = Union[Report, Compare, Ranks, Lint, Ladder, Tune]


def as_struct(doc: Union[Document, Mapping[str, Any]]) -> Document:
    """Any document as its Struct; plain data (a JSON document read back) by the kind its `schema` names."""
    if isinstance(doc, (Report, Compare, Ranks, Lint, Ladder, Tune)):
        return doc
    kind = _BY_SCHEMA.get(str(doc.get("schema")))
    if kind is None:
        raise ValueError(f"not an idlehound document (schema {doc.get('schema')!r})")
    return typed(doc, kind)


def as_data(doc: _Doc) -> dict[str, Any]:
    """A document as plain dicts and lists, equal to its JSON read back (msgspec keeps tuples: made lists here)."""
    data: dict[str, Any] = _lists(msgspec.to_builtins(doc))
    return data


def _lists(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _lists(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_lists(v) for v in x]
    return x


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group(0))
    if c < 0x10000:
        return f"\\u{c:04x}"
    c -= 0x10000
    return f"\\u{0xD800 + (c >> 10):04x}\\u{0xDC00 + (c & 0x3FF):04x}"


_NON_ASCII = re.compile(r"[^\x00-\x7f]")
# A JSON string, or a number with an exponent (msgspec writes 1e-7 and 1e21, Python's json 1e-07 and 1e+21).
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?e[+-]?\d+')
_DIGIT_E = tuple(f"{d}e" for d in range(10))  # a quick test before the slow, string-aware pass


def _respell(m: re.Match[str]) -> str:
    t = m.group(0)
    return t if t[0] == '"' else repr(float(t))


def encode(doc: object, indent: int = 2) -> str:
    """JSON text of a document, as `json.dumps(doc, indent=2)` wrote it: ASCII only (non-ASCII as \\u escapes,
    so no control or bidirectional character from a trace reaches a terminal raw) and Python's float spelling.
    A non-finite number is written as null."""
    text = msgspec.json.format(msgspec.json.encode(doc), indent=indent).decode("utf-8")
    if not text.isascii():  # non-ASCII characters can only be inside strings
        text = _NON_ASCII.sub(_escape, text)
    if any(d in text for d in _DIGIT_E):  # maybe a number with an exponent (or a string holding "1e")
        text = _TOKEN.sub(_respell, text)
    return text


def validate(text: Union[str, bytes], name: str) -> _Doc:
    """Read a document's JSON text back as its Struct (strict: a wrong type or an unknown key raises)."""
    return msgspec.json.decode(text, type=DOCUMENTS[name], strict=True)


__all__ = [  # the report model's names, the analysis report's Structs (_model_report.py) among them
    "Cell",
    "CollectiveWait",
    "Compare",
    "CompareRow",
    "CompareSide",
    "Copy",
    "D",
    "DOCUMENTS",
    "Document",
    "DataLoader",
    "Device",
    "Finding",
    "FindingBrief",
    "FindingKept",
    "FindingUnchecked",
    "Histogram",
    "IdleLine",
    "KernelFamily",
    "Kernels",
    "Ladder",
    "Lint",
    "LintRow",
    "Location",
    "MS",
    "Memory",
    "Metric",
    "Noise",
    "NotChecked",
    "PCT",
    "RankRow",
    "Ranks",
    "Replay",
    "Report",
    "Section",
    "Rung",
    "SHARE",
    "Snippet",
    "Step",
    "Straggler",
    "StragglerRow",
    "SyncPoint",
    "Timeline",
    "Tool",
    "TraceInfo",
    "Tune",
    "UtilizationCurve",
    "Variant",
    "WhyLine",
    "as_data",
    "as_struct",
    "encode",
    "rnd",
    "typed",
    "validate",
]
