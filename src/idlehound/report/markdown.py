"""Markdown rendering of the report document (for PRs, issues and CI summaries)."""

from __future__ import annotations

from typing import Any

from ._data import CAUSE_WORDS
from ._format import metric_text


def render_markdown(doc: dict[str, Any]) -> str:
    out = [f"# idlehound report: `{doc['trace']['path']}`", "", f"**{doc['headline']}**", ""]
    out += ["| metric | value | ideal | status |", "|---|---:|---:|---|"]
    for m in doc["metrics"].values():
        if m["value"] is not None:
            band = "" if m["ideal"] is None else ("≥ " if m["higher_is_better"] else "≤ ") + f"{m['ideal']:g}"
            out.append(f"| {m['label']} | {metric_text(m)} | {band} | {m['status']} |")
    out += ["", "## Step time breakdown (ms per step)", "", "| category | ms |", "|---|---:|"]
    out += [f"| {k} | {v:.3f} |" for k, v in doc["breakdown_ms"].items() if v]
    if doc["trace"]["gpu_recorded"]:
        out += ["", "## GPU idle by cause (ms per step)", "", "| cause | ms |", "|---|---:|"]
        out += [f"| {CAUSE_WORDS.get(k, k)} | {v:.3f} |" for k, v in doc["idle_by_cause_ms"].items() if v]
    out += ["", "## Findings", ""]
    if not doc["findings"]:
        out.append("No findings: nothing explains a significant share of the step.")
    for i, f in enumerate(doc["findings"], 1):
        loc = f["location"]
        where = f" at `{loc['file']}:{loc['line']}`" + ("" if loc["exact"] else " (def line, approximate)") if loc else ""
        out.append(f"### {i}. [{f['severity']}] {f['title']}{where}")
        if f["kind"] != "risk":
            out.append(f"Up to **{f['recoverable_ms_per_step']:.3f} ms per step** "
                       f"({100 * f['recoverable_share_of_step']:.1f}% of the step).")
        out += ["", *[f"- {e}" for e in f["evidence"]], "", f"**Fix:** {f['fix']}", ""]
        if f["code"]:
            out += ["```python", f["code"], "```", ""]
    if doc["idle_by_line"]:
        out += ["## GPU idle by source line", "", "| line | cause | ms per step |", "|---|---|---:|"]
        for row in doc["idle_by_line"]:
            loc = row["location"]
            where = f"`{loc['file']}:{loc['line']}`" if loc else "(no user frame)"
            out.append(f"| {where} | {CAUSE_WORDS.get(row['cause'], row['cause'])} | {row['idle_ms_per_step']:.3f} |")
    if doc["notes"]:
        out += ["", "## Notes", "", *[f"- {n}" for n in doc["notes"]]]
    return "\n".join(out) + "\n"
