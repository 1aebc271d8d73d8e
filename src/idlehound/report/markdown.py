"""Markdown rendering of the report document (for PRs, issues and CI summaries).

Every string from the document goes through `md_text` or `md_code`: a name from a trace cannot bring raw HTML,
a link, an image or a code span into the page, nor break a table row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Union

from ..analysis import NO_USER_FRAME
from . import model as m
from ._data import IDLE_LINES_NOTE, cause_words, not_checked_by_need, range_text, where
from ._escape import md_code, md_fence, md_text
from ._format import metric_text
from .model import typed
from .sections import cell_text


def render_markdown(doc: Union[m.Report, Mapping[str, Any]]) -> str:
    doc = typed(doc, m.Report)
    out = [f"# idlehound report: {md_code(doc.trace.path)}", "", f"**{md_text(doc.headline)}**", ""]
    out += ["| metric | value | ideal | status |", "|---|---:|---:|---|"]
    for met in doc.metrics.values():
        if met.value is not None:
            band = "" if met.ideal is None else ("≥ " if met.higher_is_better else "≤ ") + f"{met.ideal:g}"
            out.append(
                f"| {md_text(met.label)} | {md_text(metric_text(met))} | {band} | {md_text(met.status)} |"
            )
    out += ["", "## Step time breakdown (ms per step)", "", "| category | ms |", "|---|---:|"]
    out += [f"| {md_text(k)} | {v:.3f} |" for k, v in doc.breakdown_ms.items() if v]
    if doc.trace.gpu_recorded:
        out += ["", "## GPU idle by cause (ms per step)", "", "| cause | ms |", "|---|---:|"]
        out += [f"| {md_text(cause_words(k))} | {v:.3f} |" for k, v in doc.idle_by_cause_ms.items() if v]
    out += ["", "## Findings", ""]
    if not doc.findings:
        out.append("No findings: nothing explains a significant share of the step.")
    for i, f in enumerate(doc.findings, 1):
        out += _finding(i, f)
    out += _not_checked(doc) + _lines(doc)
    for sec in doc.sections.values():
        out += ["", f"## {md_text(sec.title)}", "", "| " + " | ".join(map(md_text, sec.columns)) + " |"]
        out.append("|" + "---|" * len(sec.columns))
        out += ["| " + " | ".join(md_text(cell_text(v)) for v in row) + " |" for row in sec.rows]
    if doc.notes:
        out += ["", "## Notes", "", *[f"- {md_text(n)}" for n in doc.notes]]
    return "\n".join(out) + "\n"


def _not_checked(doc: m.Report) -> list[str]:
    if not doc.not_checked:
        return []
    out = ["", "**Not checked** (the trace lacks the data these rules need):", ""]
    out += [
        f"- {', '.join(md_code(r) for r in rules)}: needs {md_text(needs)}"
        for needs, rules in not_checked_by_need(doc).items()
    ]
    return [*out, ""]


def _lines(doc: m.Report) -> list[str]:
    out = []
    if doc.idle_by_line:
        out += [
            "## GPU idle by source line",
            "",
            IDLE_LINES_NOTE,
            "",
            "| line | cause | idle ms per step |",
            "|---|---|---:|",
        ]
        for row in doc.idle_by_line:
            loc = md_code(where(row.location)) if row.location else NO_USER_FRAME
            out.append(f"| {loc} | {md_text(cause_words(row.cause))} | {row.idle_ms_per_step:.3f} |")
    if doc.idle_by_library_line:
        out += [
            "",
            "## GPU idle by library line",
            "",
            "| library line | cause | idle ms per step |",
            "|---|---|---:|",
        ]
        for row in doc.idle_by_library_line:
            out.append(
                f"| {md_code(where(row.location))} | "
                f"{md_text(cause_words(row.cause))} | {row.idle_ms_per_step:.3f} |"
            )
    return out


def _finding(i: int, f: m.Finding) -> list[str]:
    loc = f.location
    at = ""
    if loc:
        at = " at " + md_code(where(loc)) + ("" if loc.exact else " (def line, approximate)")
    out = [f"### {i}. [{md_text(f.severity)}] {md_text(f.title)}{at}"]
    if f.kind != "risk":
        out.append(
            f"Up to **{f.recoverable_ms_per_step:.3f} ms per step** "
            f"({100 * f.recoverable_share_of_step:.1f}% of the step{range_text(f)})."
        )
    out += ["", *[f"- {md_text(e)}" for e in f.evidence], "", f"**Fix:** {md_text(f.fix)}", ""]
    if f.code:
        out += [*md_fence(f.code, "python"), ""]
    return out
