"""Terminal table and HTML page for the distributed (ranks) document of `idlehound analyze --ranks`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional, Union

from . import model as m
from .model import typed

if TYPE_CHECKING:  # rich loads on first render only
    from rich.console import Console
    from rich.table import Table


def ranks_title(doc: m.Ranks) -> str:
    """'2 ranks compared of world size 128': how many ranks the comparison really covers."""
    n = doc.ranks_compared
    of = f" of world size {doc.world_size}" if doc.world_size and doc.world_size != n else ""
    return f"{n} ranks compared{of}"


_COLUMNS = (
    "rank",
    "step",
    "GPU busy %",
    "work",
    "collectives",
    "exposed",
    "overlapped",
    "waiting",
    "top finding",
)


def render_ranks(doc: Union[m.Ranks, Mapping[str, Any]], console: Optional[Console] = None) -> None:
    from rich.console import Console
    from rich.panel import Panel
    from rich.text import Text

    from ._escape import inert

    c = console or Console()
    # names and metadata from traces: shown as text, control characters made visible
    r: m.Ranks = inert(typed(doc, m.Ranks))
    c.print(Panel(Text(r.headline, style="bold")))
    for err in r.failed[:SHOWN]:
        c.print(Text(f"skipped a rank: {err}", style="yellow"))
    if len(r.failed) > SHOWN:
        c.print(Text(f"and {len(r.failed) - SHOWN} more skipped ranks (all in --json)", style="yellow"))
    c.print(_table(r))
    for line in _notes(r):
        c.print(Text(line))


def _table(doc: m.Ranks) -> Table:
    from rich.table import Table
    from rich.text import Text

    t = Table(
        title=Text(f"{ranks_title(doc)} ({doc.backend or 'backend unknown'}), ms per step"),
        title_justify="left",
    )
    for col in _COLUMNS:
        t.add_column(col, justify="left" if col in ("top finding",) else "right")
    rows = doc.ranks
    if len(rows) > SHOWN and doc.stragglers:  # a thousand rows help nobody: the k with the most work
        rows = _of_stragglers(doc)
        t.caption = Text(
            f"the {len(rows)} ranks with the most work per step of {len(doc.ranks)}; all in --json"
        )
    for r in rows:
        t.add_row(
            Text(str(r.rank)),
            f"{r.step_ms:.2f}",
            "—" if r.gpu_util is None else f"{r.gpu_util:.1f}",
            f"{r.compute_ms:.2f}",
            f"{r.comm_ms:.2f}",
            f"{r.exposed_comm_ms:.2f}",
            f"{r.overlapped_comm_ms:.2f}",
            f"{r.wait_ms:.2f}",
            Text(r.top_finding),
        )
    return t


def _of_stragglers(doc: m.Ranks) -> list[m.RankRow]:
    """The rows of the k stragglers, most work first."""
    by_rank = {str(r.rank): r for r in doc.ranks}
    return [by_rank[str(s.rank)] for s in doc.stragglers if str(s.rank) in by_rank]


def _notes(doc: m.Ranks) -> list[str]:
    """Under the table: the collectives waited in most, the straggler's lines and findings."""
    out = [
        f"  {col.name}: ranks wait {col.wait_ms_per_step:.2f} ms per step (median) for the last "
        f"to arrive, {col.median_ms_per_step:.2f} ms in it in all"
        for col in doc.collectives[:3]
        if col.wait_ms_per_step >= 0.01
    ]
    s = doc.straggler
    if s:
        out += [
            f"  {_where(w)} ({w.function}): {w.ms_per_step:.2f} ms per step on "
            f"rank {s.rank}, {w.others_ms_per_step:.2f} on the others"
            for w in s.why_lines[:3]
        ]
        out += [
            f"  rank {s.rank} finding: {f.title} ({f.recoverable_ms_per_step:.2f} ms per step)"
            for f in s.findings[:3]
        ]
    return out


def _where(w: m.WhyLine) -> str:
    return f"{w.file}:{w.line}"


HEAT_ROWS = 64  # heatmap rows at most: above that, each row is a group of consecutive ranks (their slowest)
HEAT_COLS = 32  # heatmap columns (steps) at most: above that, each column is a group of steps (their slowest)
SHOWN = 10  # failed ranks listed in the page; the JSON has them all


def render_ranks_html(doc: Union[m.Ranks, Mapping[str, Any]]) -> str:
    """A page whose size grows with the k stragglers, not with the ranks: bars for every rank when they are few,
    else for the k stragglers; histograms of step time and GPU idle share across ranks; a heatmap of step time
    by rank and step (groups of ranks past HEAT_ROWS); the stragglers' and the collectives' tables."""
    from .html import render_page

    r = typed(doc, m.Ranks)
    rows = r.ranks
    k = len(r.stragglers)
    shown = _of_stragglers(r) if len(rows) > max(k, SHOWN) and k else rows
    w, bar, gap = 640, 20, 8
    why = [
        {"where": _where(w_), "ms": f"{w_.ms_per_step:.2f}", "others": f"{w_.others_ms_per_step:.2f}"}
        for w_ in (r.straggler.why_lines if r.straggler else [])
    ]
    return render_page(
        "ranks.html",
        title=ranks_title(r),
        headline=r.headline,
        width=w + 200,
        height=len(shown) * (bar + gap) + 10,
        bar_h=bar,
        bars=_bars(shown, w, bar, gap),
        bars_of=("every rank" if shown is rows else f"the {len(shown)} ranks with the most work per step"),
        why=why,
        step_hist=_hist(r.step_ms_histogram, "ms"),
        idle_hist=_hist(r.idle_pct_histogram, "%"),
        heat=_heat(rows),
        stragglers=[_straggler_row(s) for s in r.stragglers],
        collectives=r.collectives,
        failed=r.failed[:SHOWN],
        failed_more=max(0, len(r.failed) - SHOWN),
    )


def _bars(rows: list[m.RankRow], w: int, bar: int, gap: int) -> list[dict[str, Any]]:
    """Per-rank bars: work, then exposed collectives, per step."""
    top = max((r.step_ms for r in rows), default=0) or 1
    bars = []
    for i, r in enumerate(rows):
        y, x = 4 + i * (bar + gap), 70.0
        rects = []
        for key, ms, color in (
            ("compute", r.compute_ms, "#2e7d32"),
            ("exposed_comm", r.exposed_comm_ms, "#c62828"),
        ):
            bw = w * ms / top
            rects.append({"x": f"{x:.1f}", "w": f"{bw:.1f}", "fill": color, "title": f"{key}: {ms:.2f} ms"})
            x += bw
        bars.append(
            {
                "y": y,
                "text_y": y + 14,
                "rank": r.rank,
                "rects": rects,
                "end_x": f"{x + 4:.1f}",
                "ms": f"{r.step_ms:.2f}",
            }
        )
    return bars


def _hist(h: Optional[m.Histogram], unit: str) -> Optional[dict[str, Any]]:
    """An SVG histogram: one column per bin, its count on top, the bins' range below."""
    if not h:
        return None
    w, hgt, pad = 600, 120, 20
    most = max(h.counts) or 1
    bw = w / len(h.counts)
    cols = []
    for i, c in enumerate(h.counts):
        ch = hgt * c / most
        cols.append(
            {
                "x": f"{i * bw:.1f}",
                "y": f"{pad + hgt - ch:.1f}",
                "w": f"{max(bw - 2, 1):.1f}",
                "h": f"{ch:.1f}",
                "count": c,
                "tx": f"{i * bw + bw / 2:.1f}",
                "title": f"{h.edges[i]:.2f} to {h.edges[i + 1]:.2f} {unit}: {c} ranks",
            }
        )
    return {
        "width": w,
        "height": hgt + 2 * pad + 4,
        "base_y": pad + hgt + 14,
        "cols": cols,
        "lo": f"{h.edges[0]:.2f} {unit}",
        "hi": f"{h.edges[-1]:.2f} {unit}",
        "hi_x": w,
    }


def _groups(n: int, most: int) -> list[tuple[int, int]]:
    """[start, end) of at most `most` consecutive groups covering range(n)."""
    k = min(n, most)
    return [(i * n // k, (i + 1) * n // k) for i in range(k)]


def _heat(rows: list[m.RankRow]) -> Optional[dict[str, Any]]:
    """Step time by rank (rows, in rank order) and step (columns); a cell of grouped ranks or steps shows their
    slowest, so one straggler stays visible among a thousand ranks."""
    n_steps = max((len(r.steps_ms) for r in rows), default=0)
    if not n_steps:
        return None
    cell_w, cell_h, left = 16, 8, 110
    rgroups, cgroups = _groups(len(rows), HEAT_ROWS), _groups(n_steps, HEAT_COLS)
    grid = [
        [max((v for r in rows[a:b] for v in r.steps_ms[c0:c1]), default=None) for c0, c1 in cgroups]
        for a, b in rgroups
    ]
    vals = [v for row in grid for v in row if v is not None]
    lo, hi = min(vals), max(vals)
    cells, labels = [], []
    for i, ((a, b), row) in enumerate(zip(rgroups, grid)):
        name = f"rank {rows[a].rank}" if b - a == 1 else f"ranks {rows[a].rank}-{rows[b - 1].rank}"
        if b - a == 1 or i % 4 == 0:
            labels.append({"y": 4 + i * cell_h + cell_h - 1, "text": name})
        for j, ((c0, c1), v) in enumerate(zip(cgroups, row)):
            if v is None:
                continue
            t = (v - lo) / (hi - lo) if hi > lo else 0.0
            steps = f"step {c0 + 1}" if c1 - c0 == 1 else f"steps {c0 + 1}-{c1}"
            cells.append(
                {
                    "x": left + j * cell_w,
                    "y": 4 + i * cell_h,
                    "fill": f"rgb({int(255 * t)},{int(80 + 100 * (1 - t))},{int(200 * (1 - t))})",
                    "title": f"{name}, {steps}: {v:.2f} ms",
                }
            )
    return {
        "width": left + len(cgroups) * cell_w + 10,
        "height": 8 + len(rgroups) * cell_h,
        "cell_w": cell_w - 1,
        "cell_h": cell_h - 1,
        "cells": cells,
        "labels": labels,
        "lo": f"{lo:.2f}",
        "hi": f"{hi:.2f}",
        "grouped": len(rgroups) < len(rows),
    }


def _straggler_row(s: m.StragglerRow) -> dict[str, Any]:
    w = s.why
    return {
        "rank": s.rank,
        "step": f"{s.step_ms:.2f}",
        "work": f"{s.compute_ms:.2f}",
        "excess": f"{s.excess_ms_per_step:.2f}",
        "where": _where(w) if w else "",
        "where_ms": f"{w.excess_ms_per_step:.2f}" if w else "",
        "finding": s.top_finding,
    }
