"""Render the report document in the terminal with rich.

Every string from the document is printed as rich `Text`, never parsed as markup, after `inert` has made its
control characters visible: a name from a trace cannot style, link, move the cursor or crash the output.
"""

from __future__ import annotations

from typing import Any, Optional

from rich.console import Console, Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from ..analysis import location_text
from ._data import CAUSE_WORDS, IDLE_LINES_NOTE, not_checked_by_need, range_text
from ._escape import inert
from ._format import metric_text

_MARK = {"ideal": ("✓ ideal", "green"), "fair": ("~ fair", "yellow"), "problem": ("✗ problem", "red")}
_SEV = {"high": "bold red", "medium": "yellow", "low": "cyan"}
# What the `~` after a line in the idle-by-line table means.
APPROX_NOTE = (
    "~ after a line: approximate, the def line of the enclosing function (the trace has no exact call line; "
    "`idlehound run` records them)."
)


def render(doc: dict[str, Any], console: Optional[Console] = None) -> None:
    c = console or Console()
    doc = inert(doc)
    t = doc["trace"]
    dev = doc["device"]["name"] or ("CPU" if not t["cuda_run"] else "GPU")
    steps = t["steps"]
    c.print(Text(f"idlehound · {t['path']}", style="bold"), soft_wrap=True)  # a path is never cut mid-name
    c.print(
        Text(
            f"{len(steps)} step(s) analysed ({t['step_source']}) · {dev}"
            + (f" · worker {t['worker']}" if t["worker"] else ""),
            style="dim",
        )
    )
    c.print(Panel(Text(doc["headline"], style="bold"), expand=True))
    c.print(_metric_table(doc["metrics"]))
    if doc["trace"]["gpu_recorded"] or any(doc["breakdown_ms"].values()):
        c.print(_breakdown(doc))
    if doc["trace"]["gpu_recorded"]:
        c.print(_idle(doc))
    _findings(c, doc["findings"])
    for needs, rules in not_checked_by_need(doc).items():
        c.print(Text(f"not checked: {', '.join(rules)} (needs {needs})", style="dim"))
    if doc["idle_by_line"]:
        c.print(_lines(doc["idle_by_line"]))
    if doc.get("idle_by_library_line"):
        c.print(_lines(doc["idle_by_library_line"], "GPU idle by library line (innermost, below your line)"))
    if doc["idle_by_line"] or doc.get("idle_by_library_line"):
        c.print(Text(IDLE_LINES_NOTE, style="dim"))
        if any(not (r["location"] or {}).get("exact", True) for r in doc["idle_by_line"]):
            c.print(Text(APPROX_NOTE, style="dim"))
    for n in doc["notes"]:
        c.print(Text(f"note: {n}", style="yellow"))


def _band(m: dict[str, Any]) -> str:
    if m["ideal"] is None:
        return ""
    op = "≥" if m["higher_is_better"] else "≤"
    return f"{op} {m['ideal']:g}"


def _metric_table(metrics: dict[str, Any]) -> Table:
    tab = Table(title="Metrics (per step)", title_justify="left", show_edge=False, pad_edge=False)
    tab.add_column("metric")
    tab.add_column("value", justify="right")
    tab.add_column("ideal", justify="right", style="dim")
    tab.add_column("")
    for m in metrics.values():
        if m["value"] is None:
            continue
        mark, style = _MARK.get(m["status"], ("", ""))
        tab.add_row(Text(m["label"]), Text(metric_text(m)), Text(_band(m)), Text(mark, style=style))
    return tab


def _bar(value: float, total: float, width: int = 24) -> str:
    n = int(round(width * value / total)) if total > 0 else 0
    return "█" * n


def _breakdown(doc: dict[str, Any]) -> Table:
    step = doc["metrics"]["step_ms"]["value"] or 0
    tab = Table(title="Step time breakdown (exposed, ms per step)", title_justify="left", show_edge=False)
    tab.add_column("category")
    tab.add_column("ms", justify="right")
    tab.add_column("%", justify="right")
    tab.add_column("")
    for k, v in doc["breakdown_ms"].items():
        if v:
            tab.add_row(Text(k), f"{v:.3f}", f"{100 * v / step:.1f}" if step else "", _bar(v, step))
    return tab


def _idle(doc: dict[str, Any]) -> Table:
    step = doc["metrics"]["step_ms"]["value"] or 0
    tab = Table(title="GPU idle by cause (ms per step)", title_justify="left", show_edge=False)
    tab.add_column("cause")
    tab.add_column("ms", justify="right")
    tab.add_column("% of step", justify="right")
    for k, v in doc["idle_by_cause_ms"].items():
        if v:
            tab.add_row(Text(CAUSE_WORDS.get(k, k)), f"{v:.3f}", f"{100 * v / step:.1f}" if step else "")
    return tab


def _findings(c: Console, findings: list[dict[str, Any]]) -> None:
    if not findings:
        c.print(Text("No findings: nothing explains a significant share of the step.", style="green"))
        return
    lost = [f for f in findings if f["kind"] != "risk"]
    for i, f in enumerate(findings, 1):
        if i == 1 and lost:
            c.print(Text("Findings, most recoverable first", style="bold"))
        if i == len(lost) + 1:  # risks come last: no time lost yet, so no place in the order by time
            c.print(Text("Risks (no step time lost yet)", style="bold"))
        head = Text(f"{i}. ")
        head.append(f"[{f['severity'].upper()}] ", style=_SEV.get(f["severity"], ""))
        head.append(f["title"], style="bold")
        if f["kind"] != "risk":
            head.append(
                f" — up to {f['recoverable_ms_per_step']:.3f} ms per step "
                f"({100 * f['recoverable_share_of_step']:.1f}% of the step{range_text(f)})"
            )
        parts: list[Any] = [head]
        if f["location"]:
            loc = f["location"]
            exact = "" if loc["exact"] else f" (in {loc['function']}, def line: approximate)"
            parts.append(
                Text(f"   at {location_text(loc, approx=False)}{exact}", style="magenta", overflow="ignore")
            )
        parts += [Text(f"   • {e}") for e in f["evidence"]]
        parts.append(Text(f"   Fix: {f['fix']}", style="green"))
        c.print(Group(*parts))
        if f["code"]:
            c.print(
                Syntax(
                    f["code"],
                    "python",
                    theme="ansi_dark",
                    padding=(0, 3),
                    background_color="default",
                    word_wrap=True,
                )
            )


def _lines(rows: list[dict[str, Any]], title: str = "GPU idle by source line") -> Table:
    tab = Table(title=f"{title} (top 10)", title_justify="left", show_edge=False)
    tab.add_column("line", no_wrap=True)  # a path cut mid-name cannot be searched for
    tab.add_column("cause")
    tab.add_column("idle ms per step", justify="right")
    tab.add_column("gaps", justify="right")
    for row in rows:
        loc = row["location"]
        where = location_text(loc, approx=False) + ("" if loc is None or loc["exact"] else " ~")
        tab.add_row(
            Text(where),
            Text(CAUSE_WORDS.get(row["cause"], row["cause"])),
            f"{row['idle_ms_per_step']:.3f}",
            Text(str(row["gaps"])),
        )
    return tab
