"""Markdown for the comparison document of `idlehound compare` (the HTML page: html.render_compare_html)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Optional, Union

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..metrics import METRICS
from . import model as m
from ._escape import inert, md_code, md_text
from ._format import num
from .model import typed

SECTIONS = (
    ("Metrics", "metrics"),
    ("Step time breakdown (ms per step)", "breakdown_ms"),
    ("GPU idle by cause (ms per step)", "idle_by_cause_ms"),
    ("Top kernels (ms per step)", "kernels_ms"),
    ("Memory", "memory"),
)
_BY_LABEL = {m.label: m for m in METRICS.values()}
_HIGHER_UNITS = ("/s", "GB/s")  # throughput: more is better
_LOWER_UNITS = ("ms", "µs")  # time a step spends: less is better


def rows_of(c: m.Compare, key: str) -> list[m.CompareRow]:
    """The rows of one section (a key of SECTIONS)."""
    rows: list[m.CompareRow] = getattr(c, key)
    return rows


def higher_is_better(key: str, row: m.CompareRow) -> Optional[bool]:
    """Whether B above A is better for this row; None where the direction is not a matter of better or worse
    (kernels' own time, memory, a kernel share, counts)."""
    if key in ("kernels_ms", "memory") or (key == "breakdown_ms" and row.label == "Kernel"):
        return None
    if key in ("breakdown_ms", "idle_by_cause_ms"):
        return False  # exposed time that is not a kernel, idle time: less is better
    met = _BY_LABEL.get(row.label)
    if met is not None and met.ideal is not None:
        return met.higher_is_better
    unit = row.unit or ""
    return True if unit in _HIGHER_UNITS else False if unit in _LOWER_UNITS else None


def judgement(key: str, row: m.CompareRow) -> str:
    """'better', 'worse' or '' (no change, no direction, or a side missing)."""
    up = higher_is_better(key, row)
    if up is None or not row.delta:
        return ""
    return "better" if (row.delta > 0) == up else "worse"


def cells(row: m.CompareRow) -> list[str]:
    """A row's A, B, Δ and Δ % as written in every renderer, each figure with its unit."""
    unit = row.unit or ""
    sep = "" if unit in ("", "%") else " "
    u = f"{sep}{unit}" if unit else ""
    return [
        num(row.a, unit=u),
        num(row.b, unit=u),
        num(row.delta, signed=True, unit=u),
        num(row.delta_pct, 1, signed=True, unit=" %"),
    ]


def render_compare(doc: Union[m.Compare, Mapping[str, Any]], console: Optional[Console] = None) -> None:
    """The comparison in the terminal: a table per section that has rows, findings only where there are any."""
    out = console or Console()
    c: m.Compare = inert(typed(doc, m.Compare))
    out.print(Text("idlehound compare", style="bold"))
    for name, side in (("A", c.a), ("B", c.b)):
        out.print(Text(f"{name} {side.path}", style="bold"), soft_wrap=True)
        out.print(Text(f"  {side.headline}"))
    for title, key in SECTIONS:
        if rows_of(c, key):
            out.print(_table(title, key, rows_of(c, key)))
    lines = finding_lines(c)
    if lines:
        out.print(Text("Findings", style="bold"))
        for line in lines:
            out.print(Text(f"  {line}"))
    out.print(Text("Δ = B - A; green: B better, red: B worse (docs/metrics.md)", style="dim"))


def _table(title: str, key: str, rows: list[m.CompareRow]) -> Table:
    style = {"better": "green", "worse": "red", "": ""}
    tab = Table(title=title, title_justify="left", show_edge=False)
    tab.add_column("")
    for head in ("A", "B", "Δ", "Δ %"):
        tab.add_column(head, justify="right")
    for row in rows:
        mark = style[judgement(key, row)]
        a, b, d, p = cells(row)
        tab.add_row(Text(row.label), a, b, Text(d, style=mark), Text(p, style=mark))
    return tab


def render_compare_markdown(doc: Union[m.Compare, Mapping[str, Any]]) -> str:
    c = typed(doc, m.Compare)
    out = [
        "# idlehound compare",
        "",
        f"- **A** {md_code(c.a.path)}: {md_text(c.a.headline)}",
        f"- **B** {md_code(c.b.path)}: {md_text(c.b.headline)}",
        "",
    ]
    for title, key in SECTIONS:
        rows = rows_of(c, key)
        if not rows:
            continue
        out += [f"## {title}", "", "| | A | B | Δ | Δ % | B is |", "|---|---:|---:|---:|---:|---|"]
        out += [f"| {md_text(x.label)} | {' | '.join(cells(x))} | {judgement(key, x)} |" for x in rows]
        out.append("")
    lines = finding_lines(c, md_text)
    if lines:
        out += ["## Findings", ""]
        out += [f"- {line}" for line in lines]
    return "\n".join(out) + "\n"


def finding_lines(c: m.Compare, text: Callable[[str], str] = str) -> list[str]:
    """A line per finding gone, new, not checked on one side, or still there; `text` escapes a title."""
    out = [f"gone: {text(f.title)} ({f.ms:.3f} ms per step in A)" for f in c.findings_gone]
    out += [f"new: {text(f.title)} ({f.ms:.3f} ms per step in B)" for f in c.findings_new]
    out += [
        f"not checked in {f.not_checked_in}: {text(f.title)} ({f.ms:.3f} ms per step in "
        f"{f.in_}; {f.not_checked_in} lacks the data to check it)"
        for f in c.findings_unchecked
    ]
    out += [
        f"still there: {text(f.title)} ({f.a_ms:.3f} → {f.b_ms:.3f} ms per step)" for f in c.findings_kept
    ]
    return out
