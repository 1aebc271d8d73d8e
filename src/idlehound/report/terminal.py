"""Render the report document in the terminal with rich.

Every string from the document is printed as rich `Text`, never parsed as markup, after `inert` has made its
control characters visible: a name from a trace cannot style, link, move the cursor or crash the output.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional, Union

from rich.console import Console, Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from . import model as m
from ._data import IDLE_LINES_NOTE, cause_words, not_checked_by_need, range_text, where
from ._escape import inert
from ._format import metric_text
from .model import typed
from .sections import cell_text

_MARK = {"ideal": ("✓ ideal", "green"), "fair": ("~ fair", "yellow"), "problem": ("✗ problem", "red")}
_SEV = {"high": "bold red", "medium": "yellow", "low": "cyan"}
# What the `~` after a line in the idle-by-line table means.
APPROX_NOTE = (
    "~ after a line: approximate, the def line of the enclosing function (the trace has no exact call line; "
    "`idlehound run` records them)."
)


def render(doc: Union[m.Report, Mapping[str, Any]], console: Optional[Console] = None) -> None:
    _render(console or Console(), inert(typed(doc, m.Report)))


def _render(c: Console, doc: m.Report) -> None:
    t = doc.trace
    dev = doc.device.name or ("CPU" if not t.cuda_run else "GPU")
    c.print(Text(f"idlehound · {t.path}", style="bold"), soft_wrap=True)  # a path is never cut mid-name
    c.print(
        Text(
            f"{len(t.steps)} step(s) analysed ({t.step_source}) · {dev}"
            + (f" · worker {t.worker}" if t.worker else ""),
            style="dim",
        )
    )
    c.print(Panel(Text(doc.headline, style="bold"), expand=True))
    c.print(_metric_table(doc.metrics))
    if t.gpu_recorded or any(doc.breakdown_ms.values()):
        c.print(_breakdown(doc))
    if t.gpu_recorded:
        c.print(_idle(doc))
    _findings(c, doc.findings)
    for needs, rules in not_checked_by_need(doc).items():
        c.print(Text(f"not checked: {', '.join(rules)} (needs {needs})", style="dim"))
    _line_tables(c, doc)
    for sec in doc.sections.values():
        c.print(_section(sec))
    for n in doc.notes:
        c.print(Text(f"note: {n}", style="yellow"))


def _line_tables(c: Console, doc: m.Report) -> None:
    if doc.idle_by_line:
        c.print(_lines(doc.idle_by_line))
    if doc.idle_by_library_line:
        c.print(_lines(doc.idle_by_library_line, "GPU idle by library line (innermost, below your line)"))
    if doc.idle_by_line or doc.idle_by_library_line:
        c.print(Text(IDLE_LINES_NOTE, style="dim"))
        if any(r.location is not None and not r.location.exact for r in doc.idle_by_line):
            c.print(Text(APPROX_NOTE, style="dim"))


def _band(met: m.Metric) -> str:
    if met.ideal is None:
        return ""
    op = "≥" if met.higher_is_better else "≤"
    return f"{op} {met.ideal:g}"


def _metric_table(metrics: dict[str, m.Metric]) -> Table:
    tab = Table(title="Metrics (per step)", title_justify="left", show_edge=False, pad_edge=False)
    tab.add_column("metric")
    tab.add_column("value", justify="right")
    tab.add_column("ideal", justify="right", style="dim")
    tab.add_column("")
    for met in metrics.values():
        if met.value is None:
            continue
        mark, style = _MARK.get(met.status, ("", ""))
        tab.add_row(Text(met.label), Text(metric_text(met)), Text(_band(met)), Text(mark, style=style))
    return tab


def _bar(value: float, total: float, width: int = 24) -> str:
    n = int(round(width * value / total)) if total > 0 else 0
    return "█" * n


def _breakdown(doc: m.Report) -> Table:
    rows = list(doc.breakdown_ms.items())
    return _ms_table(doc, "Step time breakdown (exposed, ms per step)", ("category", "%"), rows, bars=True)


def _idle(doc: m.Report) -> Table:
    rows = [(cause_words(k), v) for k, v in doc.idle_by_cause_ms.items()]
    return _ms_table(doc, "GPU idle by cause (ms per step)", ("cause", "% of step"), rows, bars=False)


def _ms_table(
    doc: m.Report, title: str, heads: tuple[str, str], rows: list[tuple[str, Optional[float]]], bars: bool
) -> Table:
    """Ms per step by name with each row's share of the step (and a bar); rows of zero are left out."""
    step = doc.metrics["step_ms"].value or 0
    tab = Table(title=title, title_justify="left", show_edge=False)
    tab.add_column(heads[0])
    tab.add_column("ms", justify="right")
    tab.add_column(heads[1], justify="right")
    if bars:
        tab.add_column("")
    for name, v in rows:
        if v:
            bar = (_bar(v, step),) if bars else ()
            tab.add_row(Text(name), f"{v:.3f}", f"{100 * v / step:.1f}" if step else "", *bar)
    return tab


def _findings(c: Console, findings: list[m.Finding]) -> None:
    if not findings:
        c.print(Text("No findings: nothing explains a significant share of the step.", style="green"))
        return
    lost = [f for f in findings if f.kind != "risk"]
    for i, f in enumerate(findings, 1):
        if i == 1 and lost:
            c.print(Text("Findings, most recoverable first", style="bold"))
        if i == len(lost) + 1:  # risks come last: no time lost yet, so no place in the order by time
            c.print(Text("Risks (no step time lost yet)", style="bold"))
        c.print(Group(*_finding(i, f)))
        if f.code:
            c.print(
                Syntax(
                    f.code,
                    "python",
                    theme="ansi_dark",
                    padding=(0, 3),
                    background_color="default",
                    word_wrap=True,
                )
            )


def _finding(i: int, f: m.Finding) -> list[Text]:
    head = Text(f"{i}. ")
    head.append(f"[{f.severity.upper()}] ", style=_SEV.get(f.severity, ""))
    head.append(f.title, style="bold")
    if f.kind != "risk":
        head.append(
            f" — up to {f.recoverable_ms_per_step:.3f} ms per step "
            f"({100 * f.recoverable_share_of_step:.1f}% of the step{range_text(f)})"
        )
    parts = [head]
    loc = f.location
    if loc:
        exact = "" if loc.exact else f" (in {loc.function}, def line: approximate)"
        parts.append(Text(f"   at {where(loc)}{exact}", style="magenta", overflow="ignore"))
    parts += [Text(f"   • {e}") for e in f.evidence]
    parts.append(Text(f"   Fix: {f.fix}", style="green"))
    return parts


def _lines(rows: list[m.IdleLine], title: str = "GPU idle by source line") -> Table:
    tab = Table(title=f"{title} (top 10)", title_justify="left", show_edge=False)
    tab.add_column("line", no_wrap=True)  # a path cut mid-name cannot be searched for
    tab.add_column("cause")
    tab.add_column("idle ms per step", justify="right")
    tab.add_column("gaps", justify="right")
    for row in rows:
        loc = row.location
        tab.add_row(
            Text(where(loc) + ("" if loc is None or loc.exact else " ~")),
            Text(cause_words(row.cause)),
            f"{row.idle_ms_per_step:.3f}",
            Text(str(row.gaps)),
        )
    return tab


def _section(sec: m.Section) -> Table:
    # as wide as its title at least: a narrow table would wrap the title
    tab = Table(title=sec.title, title_justify="left", show_edge=False, min_width=len(sec.title))
    for col in sec.columns:
        tab.add_column(col)
    for row in sec.rows:
        tab.add_row(*(Text(cell_text(v)) for v in row))
    return tab
