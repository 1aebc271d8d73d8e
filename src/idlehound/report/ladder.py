"""Terminal table for a ladder run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Optional, Union

from rich.console import Console
from rich.table import Table
from rich.text import Text

from . import model as m
from ._escape import md_text, visible
from ._format import num as _n
from .model import typed

_COLUMNS: list[tuple[str, Literal["left", "right"]]] = [
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


def render_ladder(doc: Union[m.Ladder, Mapping[str, Any]], console: Optional[Console] = None) -> None:
    """The ladder as a table; columns with nothing measured in them (NVML, memory and the ceiling on a CPU) are
    left out, so it fits a terminal of 80 columns."""
    c = console or Console()
    lad = typed(doc, m.Ladder)
    c.print(_table(lad))
    skipped: dict[str, list[str]] = {}
    for r in lad.rungs:
        if r.status == "skipped":
            skipped.setdefault(r.reason, []).append(r.name)
    for reason, names in skipped.items():
        c.print(Text(visible(f"  skipped ({reason}): {', '.join(names)}"), style="dim"))
    for r in lad.rungs:
        if r.tried:
            c.print(Text(visible(f"  {r.name} tried: {tried_text(r.tried)}"), style="dim"))


def _table(lad: m.Ladder) -> Table:
    t = Table(title=Text(visible(f"Optimisation ladder on {lad.device}")), title_justify="left")
    measured = [(r, row) for r, row in zip(lad.rungs, ladder_table_rows(lad)) if r.status != "skipped"]
    keep = [i for i in range(len(_COLUMNS)) if i == 0 or any(row[i] not in ("", "—") for _, row in measured)]
    for i in keep:
        t.add_column(_COLUMNS[i][0], justify=_COLUMNS[i][1])
    for r, row in measured:
        cells = [row[i] for i in keep] if r.status == "ok" else [row[0], row[1]] + [""] * (len(keep) - 2)
        t.add_row(*(Text(visible(cell)) for cell in cells[: len(keep)]))
    return t


def tried_text(tried: list[dict[str, Any]]) -> str:
    """What a rung's sweep measured, one candidate after another: '1 worker, batch 8: 25 samples/s; ...'."""
    parts = []
    for t in tried:
        n = t.get("num_workers")
        what = f"{n} worker{'s' if n != 1 else ''}, batch {t.get('batch_size')}"
        what += f", {t['amp']}" if t.get("amp") else ""
        got = (
            f"{t['samples_per_s']:,.0f} samples/s"
            if t.get("samples_per_s") is not None
            else f"failed ({t.get('error', '')})"
        )
        parts.append(f"{what}: {got}")
    return "; ".join(parts)


def ladder_table_rows(doc: Union[m.Ladder, Mapping[str, Any]]) -> list[list[str]]:
    """The ladder table's cells, shared by the terminal, markdown and HTML renderers."""
    rows = []
    for r in typed(doc, m.Ladder).rungs:
        if r.status != "ok":
            rows.append([r.label, f"{r.status}: {r.reason}", "", "", "", "", "", "", ""])
            continue
        rows.append(
            [
                r.label,
                _n(r.samples_per_s, 0),
                _n(r.ms_per_step, 2),
                _n(r.gpu_busy_pct, 1, "%"),
                _n(r.nvml_util, 0, "%"),
                _n(r.peak_mem_gib, 2),
                _n(r.speedup, 2, "×"),
                _n(r.pct_of_ceiling, 1, "%"),
                r.top_finding,
            ]
        )
    return rows


def ladder_markdown(doc: Union[m.Ladder, Mapping[str, Any]]) -> str:
    head = (
        "| rung | samples/s | ms/step | GPU busy | NVML util | peak GiB | speed-up | % of ceiling | "
        "top remaining finding |"
    )
    rows = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    rows += ["| " + " | ".join(map(md_text, row)) + " |" for row in ladder_table_rows(doc)]
    return "\n".join(rows) + "\n"
