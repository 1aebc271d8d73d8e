"""Markdown rendering of the report document (for PRs, issues and CI summaries).

Every string from the document goes through `md_text` or `md_code`: a name from a trace cannot bring raw HTML,
a link, an image or a code span into the page, nor break a table row.
"""

from __future__ import annotations

from typing import Any

from ..analysis import NO_USER_FRAME, location_text
from ._data import CAUSE_WORDS, IDLE_LINES_NOTE, not_checked_by_need, range_text
from ._escape import md_code, md_fence, md_text
from ._format import metric_text


def render_markdown(doc: dict[str, Any]) -> str:
    out = [f"# idlehound report: {md_code(doc['trace']['path'])}", "", f"**{md_text(doc['headline'])}**", ""]
    out += ["| metric | value | ideal | status |", "|---|---:|---:|---|"]
    for m in doc["metrics"].values():
        if m["value"] is not None:
            band = "" if m["ideal"] is None else ("≥ " if m["higher_is_better"] else "≤ ") + f"{m['ideal']:g}"
            out.append(
                f"| {md_text(m['label'])} | {md_text(metric_text(m))} | {band} | {md_text(m['status'])} |"
            )
    out += ["", "## Step time breakdown (ms per step)", "", "| category | ms |", "|---|---:|"]
    out += [f"| {md_text(k)} | {v:.3f} |" for k, v in doc["breakdown_ms"].items() if v]
    if doc["trace"]["gpu_recorded"]:
        out += ["", "## GPU idle by cause (ms per step)", "", "| cause | ms |", "|---|---:|"]
        out += [
            f"| {md_text(CAUSE_WORDS.get(k, k))} | {v:.3f} |" for k, v in doc["idle_by_cause_ms"].items() if v
        ]
    out += ["", "## Findings", ""]
    if not doc["findings"]:
        out.append("No findings: nothing explains a significant share of the step.")
    for i, f in enumerate(doc["findings"], 1):
        out += _finding(i, f)
    if doc.get("not_checked"):
        out += ["", "**Not checked** (the trace lacks the data these rules need):", ""]
        out += [
            f"- {', '.join(md_code(r) for r in rules)}: needs {md_text(needs)}"
            for needs, rules in not_checked_by_need(doc).items()
        ]
        out.append("")
    if doc["idle_by_line"]:
        out += [
            "## GPU idle by source line",
            "",
            IDLE_LINES_NOTE,
            "",
            "| line | cause | idle ms per step |",
            "|---|---|---:|",
        ]
        for row in doc["idle_by_line"]:
            loc = row["location"]
            where = md_code(location_text(loc, approx=False)) if loc else NO_USER_FRAME
            out.append(
                f"| {where} | {md_text(CAUSE_WORDS.get(row['cause'], row['cause']))} | "
                f"{row['idle_ms_per_step']:.3f} |"
            )
    if doc.get("idle_by_library_line"):
        out += [
            "",
            "## GPU idle by library line",
            "",
            "| library line | cause | idle ms per step |",
            "|---|---|---:|",
        ]
        for row in doc["idle_by_library_line"]:
            loc = row["location"]
            out.append(
                f"| {md_code(loc['file'] + ':' + str(loc['line']))} | "
                f"{md_text(CAUSE_WORDS.get(row['cause'], row['cause']))} | {row['idle_ms_per_step']:.3f} |"
            )
    if doc["notes"]:
        out += ["", "## Notes", "", *[f"- {md_text(n)}" for n in doc["notes"]]]
    return "\n".join(out) + "\n"


def _finding(i: int, f: dict[str, Any]) -> list[str]:
    loc = f["location"]
    where = ""
    if loc:
        where = (
            " at "
            + md_code(location_text(loc, approx=False))
            + ("" if loc["exact"] else " (def line, approximate)")
        )
    out = [f"### {i}. [{md_text(f['severity'])}] {md_text(f['title'])}{where}"]
    if f["kind"] != "risk":
        out.append(
            f"Up to **{f['recoverable_ms_per_step']:.3f} ms per step** "
            f"({100 * f['recoverable_share_of_step']:.1f}% of the step{range_text(f)})."
        )
    out += ["", *[f"- {md_text(e)}" for e in f["evidence"]], "", f"**Fix:** {md_text(f['fix'])}", ""]
    if f["code"]:
        out += [*md_fence(f["code"], "python"), ""]
    return out
