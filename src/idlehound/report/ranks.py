"""Terminal table and HTML page for the distributed (ranks) document of `idlehound analyze --ranks`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ..analysis import location_text

if TYPE_CHECKING:  # rich loads on first render only
    from rich.console import Console


def ranks_title(doc: dict[str, Any]) -> str:
    """'2 ranks compared of world size 128': how many ranks the comparison really covers."""
    n = doc.get("ranks_compared", len(doc["ranks"]))
    of = f" of world size {doc['world_size']}" if doc["world_size"] and doc["world_size"] != n else ""
    return f"{n} ranks compared{of}"


def render_ranks(doc: dict[str, Any], console: Optional[Console] = None) -> None:
    from rich.console import Console
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    from ._escape import inert

    c = console or Console()
    doc = inert(doc)  # names and metadata from traces: shown as text, control characters made visible
    c.print(Panel(Text(doc["headline"], style="bold")))
    for err in doc.get("failed", []):
        c.print(Text(f"skipped a rank: {err}", style="yellow"))
    t = Table(
        title=Text(f"{ranks_title(doc)} ({doc['backend'] or 'backend unknown'}), ms per step"),
        title_justify="left",
    )
    for col in (
        "rank",
        "step",
        "GPU busy %",
        "work",
        "collectives",
        "exposed",
        "overlapped",
        "waiting",
        "top finding",
    ):
        t.add_column(col, justify="left" if col in ("top finding",) else "right")
    for r in doc["ranks"]:
        t.add_row(
            Text(str(r["rank"])),
            f"{r['step_ms']:.2f}",
            "—" if r["gpu_util"] is None else f"{r['gpu_util']:.1f}",
            f"{r['compute_ms']:.2f}",
            f"{r['comm_ms']:.2f}",
            f"{r['exposed_comm_ms']:.2f}",
            f"{r['overlapped_comm_ms']:.2f}",
            f"{r['wait_ms']:.2f}",
            Text(r["top_finding"]),
        )
    c.print(t)
    s = doc["straggler"]
    if s:
        for w in s["why_lines"][:3]:
            c.print(
                Text(
                    f"  {location_text(w, approx=False)} ({w['function']}): {w['ms_per_step']:.2f} ms per step on "
                    f"rank {s['rank']}, {w['others_ms_per_step']:.2f} on the others"
                )
            )
        for f in s["findings"][:3]:
            c.print(
                Text(
                    f"  rank {s['rank']} finding: {f['title']} ({f['recoverable_ms_per_step']:.2f} ms per "
                    "step)"
                )
            )


def render_ranks_html(doc: dict[str, Any]) -> str:
    """Per-rank bars: work, exposed collectives and overlapped collectives per step."""
    from .html import render_page

    rows = doc["ranks"]
    top = max(r["step_ms"] for r in rows) or 1
    w, bar, gap = 640, 20, 8
    bars = []
    for i, r in enumerate(rows):
        y, x = 4 + i * (bar + gap), 70.0
        rects = []
        for key, color in (("compute_ms", "#2e7d32"), ("exposed_comm_ms", "#c62828")):
            bw = w * r[key] / top
            rects.append(
                {
                    "x": f"{x:.1f}",
                    "w": f"{bw:.1f}",
                    "fill": color,
                    "title": f"{key.replace('_ms', '')}: {r[key]:.2f} ms",
                }
            )
            x += bw
        bars.append(
            {
                "y": y,
                "text_y": y + 14,
                "rank": r["rank"],
                "rects": rects,
                "end_x": f"{x + 4:.1f}",
                "ms": f"{r['step_ms']:.2f}",
            }
        )
    why = [
        {
            "where": location_text(w_, approx=False),
            "ms": f"{w_['ms_per_step']:.2f}",
            "others": f"{w_['others_ms_per_step']:.2f}",
        }
        for w_ in (doc["straggler"] or {}).get("why_lines", [])
    ]
    return render_page(
        "ranks.html",
        title=ranks_title(doc),
        headline=doc["headline"],
        width=w + 200,
        height=len(rows) * (bar + gap) + 10,
        bar_h=bar,
        bars=bars,
        why=why,
    )
