"""What `idlehound.analyze()` returns: the analysis with its findings, as one object a notebook can show.

A `Result` is an `Analysis` (so older code that passes it to `diagnose()` or `report_data()` keeps working) that
also holds the ranked findings and the report document, renders itself in Jupyter (`_repr_html_`) and hands its
tables to pandas or polars on request (optional dependencies, imported only then).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from importlib import import_module
from pathlib import Path
from typing import Any, Optional, Union

from .analysis import Analysis, location_text
from .diagnose import Diagnosis, Finding
from .report import build_model
from .report import model as m
from .report.model import as_data

# The report's tables that to_pandas() and to_polars() hand over, each a list of flat rows made from the document.
TABLES = ("metrics", "steps", "findings", "idle_by_cause", "idle_by_line", "sync_points", "kernels")


@dataclass
class Result(Analysis):
    """The diagnosed analysis of one trace: every `Analysis` field, plus `diagnosis` (`findings`, ranked) and `doc`
    (the JSON report document, the same as `idlehound analyze --json` prints)."""

    diagnosis: Diagnosis = field(default_factory=Diagnosis)
    _report: Optional[m.Report] = field(default=None, repr=False, compare=False)
    _doc: Optional[dict[str, Any]] = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, a: Analysis, diagnosis: Diagnosis, report: Optional[m.Report] = None) -> Result:
        values = {f.name: getattr(a, f.name) for f in fields(Analysis)}
        return cls(**values, diagnosis=diagnosis, _report=report)

    @property
    def findings(self) -> list[Finding]:
        return list(self.diagnosis.findings)

    @property
    def analysis(self) -> Analysis:
        return self

    @property
    def report(self) -> m.Report:
        """The report document as its typed Struct (report/model.py): what `idlehound.report.write` takes."""
        if self._report is None:
            self._report = build_model(self, self.diagnosis)
        return self._report

    @property
    def doc(self) -> dict[str, Any]:
        """The versioned report document (docs/json-schema.md) as plain data."""
        if self._doc is None:
            self._doc = as_data(self.report)
        return self._doc

    def write(
        self, path: Union[str, os.PathLike[str]], fmt: Optional[str] = None, force: bool = False
    ) -> Path:
        """Write the report to a file as `idlehound analyze -o` does (report.write): JSON, markdown or HTML by
        `fmt` ("json", "md", "html") or else the extension; an existing file is kept unless force."""
        from .report import write

        return write(self.report, Path(os.fspath(path)), fmt, force=force, inputs=[self.trace.path])

    def __repr__(self) -> str:  # the dataclass's would print every field of the analysis
        causes = ", ".join(str(f.cause) for f in self.findings) or "none"
        return f"<idlehound.Result {self.trace.path.name}: {self.n_steps} step(s), findings: {causes}>"

    @property
    def headline(self) -> str:
        return self.report.headline

    def _repr_html_(self) -> str:
        """The HTML report's headline, metrics, charts and findings, for Jupyter: inline CSS scoped to this
        output and inline SVG, nothing fetched."""
        from .report import render_html_fragment

        return render_html_fragment(self.report)

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        """The report's tables as lists of flat rows (what to_pandas() and to_polars() turn into frames)."""
        return table_rows(self.doc)

    def to_pandas(self) -> dict[str, Any]:
        """The report's tables as pandas DataFrames, by name (TABLES). Needs pandas installed."""
        try:
            pd = import_module("pandas")  # optional: imported only here, by name (no stubs needed)
        except ImportError:
            raise ImportError(
                "Result.to_pandas() needs pandas, which is not installed: pip install pandas"
            ) from None
        return {name: pd.DataFrame(rows, columns=_columns(rows)) for name, rows in self.tables().items()}

    def to_polars(self) -> dict[str, Any]:
        """The report's tables as polars DataFrames, by name (TABLES). Needs polars installed."""
        try:
            pl = import_module("polars")
        except ImportError:
            raise ImportError(
                "Result.to_polars() needs polars, which is not installed: pip install polars"
            ) from None
        return {name: pl.DataFrame(rows) for name, rows in self.tables().items()}


def _columns(rows: list[dict[str, Any]]) -> Optional[list[str]]:
    return list(rows[0]) if rows else None


def _finding_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "rank": i,
            "cause": f["cause"],
            "title": f["title"],
            "severity": f["severity"],
            "kind": f["kind"],
            "recoverable_ms_per_step": f["recoverable_ms_per_step"],
            "recoverable_share_of_step": f["recoverable_share_of_step"],
            "location": location_text(f["location"], approx=False) if f["location"] else None,
            "fix": f["fix"],
        }
        for i, f in enumerate(doc["findings"], 1)
    ]


def table_rows(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Flat rows for each table of a report document; figures as the document has them (ms per step)."""
    where = location_text
    return {
        "metrics": [
            {"metric": k, "value": m["value"], "unit": m["unit"], "label": m["label"], "status": m["status"]}
            for k, m in doc["metrics"].items()
        ],
        "steps": [
            {
                "step": s["number"],
                "duration_ms": s["duration_ms"],
                "gpu_busy_pct": s["gpu_busy_pct"],
                **{f"idle_{c}_ms": ms for c, ms in s["idle_ms"].items()},
            }
            for s in doc["steps"]
        ],
        "findings": _finding_rows(doc),
        "idle_by_cause": [{"cause": c, "idle_ms_per_step": ms} for c, ms in doc["idle_by_cause_ms"].items()],
        "idle_by_line": [
            {
                "location": where(r["location"], approx=False),
                "cause": r["cause"],
                "idle_ms_per_step": r["idle_ms_per_step"],
                "gaps": r["gaps"],
            }
            for r in doc["idle_by_line"]
        ],
        "sync_points": [
            {
                "location": where(s["location"], approx=False),
                "kind": s["kind"],
                "call": s["call"],
                "count_per_step": s["count_per_step"],
                "idle_after_ms_per_step": s["idle_after_ms_per_step"],
                "blocked_ms_per_step": s["blocked_ms_per_step"],
            }
            for s in doc["sync_points"]
        ],
        "kernels": [
            {
                "name": k["name"],
                "count_per_step": k["count_per_step"],
                "ms_per_step": k["ms_per_step"],
                "precision": k["precision"],
            }
            for k in doc["kernels"]["top"]
        ],
    }


__all__ = ["TABLES", "Result", "table_rows"]
