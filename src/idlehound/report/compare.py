"""Markdown for the comparison document of `idlehound compare` (the HTML page: html.render_compare_html)."""

from __future__ import annotations

from typing import Any, Callable

from ._escape import md_code, md_text
from ._format import num


def render_compare_markdown(c: dict[str, Any]) -> str:
    out = [
        "# idlehound compare",
        "",
        f"- **A** {md_code(c['a']['path'])}: {md_text(c['a']['headline'])}",
        f"- **B** {md_code(c['b']['path'])}: {md_text(c['b']['headline'])}",
        "",
    ]
    for title, key in (
        ("Metrics", "metrics"),
        ("Step time breakdown (ms per step)", "breakdown_ms"),
        ("GPU idle by cause (ms per step)", "idle_by_cause_ms"),
        ("Top kernels (ms per step)", "kernels_ms"),
        ("Memory", "memory"),
    ):
        if not c[key]:
            continue
        out += [f"## {title}", "", "| | A | B | Δ | Δ % |", "|---|---:|---:|---:|---:|"]
        out += [
            f"| {md_text(x['label'])} | {num(x['a'])} | {num(x['b'])} | {num(x['delta'], signed=True)} | "
            f"{num(x['delta_pct'], signed=True)} |"
            for x in c[key]
        ]
        out.append("")
    out += ["## Findings", ""]
    out += [f"- {line}" for line in finding_lines(c, md_text)]
    return "\n".join(out) + "\n"


def finding_lines(c: dict[str, Any], text: Callable[[str], str] = str) -> list[str]:
    """A line per finding gone, new, not checked on one side, or still there; `text` escapes a title."""
    out = [f"gone: {text(f['title'])} ({f['ms']:.3f} ms per step in A)" for f in c["findings_gone"]]
    out += [f"new: {text(f['title'])} ({f['ms']:.3f} ms per step in B)" for f in c["findings_new"]]
    out += [
        f"not checked in {f['not_checked_in']}: {text(f['title'])} ({f['ms']:.3f} ms per step in "
        f"{f['in']}; {f['not_checked_in']} lacks the data to check it)"
        for f in c.get("findings_unchecked", [])
    ]
    out += [
        f"still there: {text(f['title'])} ({f['a_ms']:.3f} → {f['b_ms']:.3f} ms per step)"
        for f in c["findings_kept"]
    ]
    return out
