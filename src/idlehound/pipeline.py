"""Trace path in, analysis + findings + report document out. The CLI and capture both use this."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Optional, Union

from ._limits import small_pages
from .analysis import Analysis, analyze, load_sidecar
from .diagnose import Diagnosis, Finding, Thresholds, diagnose
from .errors import IdlehoundError
from .report import build_model
from .report import model as m
from .report.model import as_data
from .result import Result as Diagnosed
from .runfolder import read_run_info, run_info_rank, sidecar_path
from .trace import Trace, load_trace


@dataclass
class Result:
    analysis: Analysis
    diagnosis: Diagnosis
    report: m.Report  # the report document, what report.write and the renderers take

    @cached_property
    def doc(self) -> dict[str, Any]:
        """The report document as plain data (what its JSON holds)."""
        return as_data(self.report)

    @property
    def findings(self) -> list[Finding]:
        return list(self.diagnosis.findings)

    def diagnosed(self) -> Diagnosed:
        """The same analysis, findings and document as the one object `idlehound.analyze()` returns."""
        return Diagnosed.of(self.analysis, self.diagnosis, self.report)


def analyze_path(
    path: Union[str, Path],
    run: Optional[str] = None,
    worker: Optional[str] = None,
    step: Optional[int] = None,
    thresholds: Optional[Thresholds] = None,
    max_bytes: Optional[int] = None,
    sidecar: Optional[dict[str, Any]] = None,
    run_info: Optional[dict[str, Any]] = None,
    notes: Sequence[str] = (),
) -> Result:
    """Load, analyse and diagnose a trace file or log dir; uses the capture sidecar and run.json if present
    (`sidecar` / `run_info` given here take their place). `notes`: the caller's, added to the analysis's.

    max_bytes caps the trace's uncompressed JSON (default: $IDLEHOUND_MAX_TRACE_BYTES, else 4 GiB).
    """
    with small_pages():
        trace = load_trace(path, run=run, worker=worker, max_bytes=max_bytes)
        return diagnose_trace(trace, step, thresholds, sidecar, run_info, notes)


def diagnose_trace(
    trace: Trace,
    step: Optional[int] = None,
    thresholds: Optional[Thresholds] = None,
    sidecar: Optional[dict[str, Any]] = None,
    run_info: Optional[dict[str, Any]] = None,
    notes: Sequence[str] = (),
) -> Result:
    """Analyse (with the run folder, as analyze_run_folder), diagnose and build the report of a loaded trace."""
    a = analyze_run_folder(trace, step=step, sidecar=sidecar, run_info=run_info, notes=notes)
    d = diagnose(a, thresholds)
    return Result(a, d, build_model(a, d))


def analyze_run_folder(
    trace: Trace,
    step: Optional[int] = None,
    sidecar: Optional[dict[str, Any]] = None,
    run_info: Optional[dict[str, Any]] = None,
    notes: Sequence[str] = (),
) -> Analysis:
    """Analyse a loaded trace with what its run folder holds (sidecar, run.json, samples.json).

    The one path for the CLI and the Python API, so both give the same document. `sidecar` / `run_info`
    given here take the place of the folder's; `notes` (the caller's) come after the folder's.
    """
    folder_notes: list[str] = []
    from_file = trace.path.is_file()  # a trace parsed from bytes has no folder to read
    if sidecar is None and from_file:
        sc = sidecar_path(trace.path)
        base = trace.metadata.get("baseTimeNanoseconds")
        base_ns = base if isinstance(base, int) and not isinstance(base, bool) and 0 <= base < 2**63 else 0
        sidecar = load_sidecar(sc, base_ns) if sc.is_file() else None
        if sidecar is None and sc.is_file():
            folder_notes.append(
                f"{sc.name} is not a readable capture sidecar: exact lines and stored source not used"
            )
    if run_info is None and from_file:
        run_info = read_run_info(trace.path.parent, run_info_rank(trace.path.parent, trace.worker))
    if not sidecar and trace.with_stack:
        folder_notes.append(
            "source lines are function def lines (approximate); `idlehound run` records exact lines"
        )
    return analyze(trace, sidecar=sidecar, step=step, run_info=run_info, extra_notes=[*folder_notes, *notes])


def parse_gates(specs: tuple[str, ...]) -> dict[str, float]:
    """'gpu_util=70' -> {'gpu_util': 70.0}. Raises IdlehoundError on a bad spec."""
    from .metrics import METRICS

    gates = {}
    for spec in specs:
        key, _, val = spec.partition("=")
        key = key.strip()
        if key not in METRICS:
            raise IdlehoundError(f"--fail-under: unknown metric {key!r} (one of: {', '.join(METRICS)})")
        try:
            gates[key] = float(val)
        except ValueError:
            raise IdlehoundError(f"--fail-under: {spec!r} is not metric=number") from None
    return gates


def failed_gates(doc: m.Report, gates: dict[str, float]) -> list[str]:
    """Gates whose metric is below its floor (or missing from the trace)."""
    out = []
    for key, floor in gates.items():
        v = doc.metrics[key].value
        if v is None:
            out.append(f"{key}: not measured in this trace (floor {floor:g})")
        elif v < floor:
            out.append(f"{key} = {v:g} is under {floor:g}")
    return out
