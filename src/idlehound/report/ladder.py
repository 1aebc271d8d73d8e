"""Terminal table for a ladder run."""

from __future__ import annotations

from typing import Any, Literal, Optional

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ._escape import md_text, visible
from ._format import num as _n


def render_ladder(doc: dict[str, Any], console: Optional[Console] = None) -> None:
    c = console or Console()
    t = Table(title=Text(visible(f"Optimisation ladder on {doc['device']}")), title_justify="left")
    cols: list[tuple[str, Literal["left", "right"]]] = [
        ("rung", "left"),
        ("samples/s", "right"),
        ("ms/step", "right"),
        ("GPU busy", "right"),
        ("NVML util", "right"),
        ("peak GiB", "right"),
        ("speed-up", "right"),
        ("% ceiling", "right"),
        ("top remaining finding", "left"),
    ]
    for col, just in cols:
        t.add_column(col, justify=just)
    for row in ladder_table_rows(doc):
        t.add_row(*(Text(visible(cell)) for cell in row))
    c.print(t)
    for r in doc["rungs"]:
        for tr in r.get("tried") or []:
            c.print(Text(visible(f"  {r['name']} tried: {tr}"), style="dim"))


def ladder_table_rows(doc: dict[str, Any]) -> list[list[str]]:
    """The ladder table's cells, shared by the terminal, markdown and HTML renderers."""
    rows = []
    for r in doc["rungs"]:
        if r["status"] != "ok":
            rows.append([r["label"], f"{r['status']}: {r['reason']}", "", "", "", "", "", "", ""])
            continue
        rows.append(
            [
                r["label"],
                _n(r["samples_per_s"], 0),
                _n(r["ms_per_step"], 2),
                _n(r["gpu_busy_pct"], 1, "%"),
                _n(r["nvml_util"], 0, "%"),
                _n(r["peak_mem_gib"], 2),
                _n(r["speedup"], 2, "×"),
                _n(r["pct_of_ceiling"], 1, "%"),
                r["top_finding"],
            ]
        )
    return rows


def ladder_markdown(doc: dict[str, Any]) -> str:
    head = (
        "| rung | samples/s | ms/step | GPU busy | NVML util | peak GiB | speed-up | % of ceiling | "
        "top remaining finding |"
    )
    rows = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    rows += ["| " + " | ".join(map(md_text, row)) + " |" for row in ladder_table_rows(doc)]
    return "\n".join(rows) + "\n"
