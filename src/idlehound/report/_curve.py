"""The step-time curve of a whole run (steps.jsonl) with its windows marked: a terminal sparkline and SVG values.

A curve is {"clock": str, "rows": [[first_step, steps, mean_ms, max_ms, loader_ms, mem_mib, t_s], ...],
"windows": [{"start_step", "steps", "reason", "status", ...}], "comparisons": [str, ...]}.
"""

from __future__ import annotations

from typing import Any, Optional

BARS = "▁▂▃▄▅▆▇█"
WIDTH = 960
HEIGHT = 160
PAD = 36


def _bins(rows: list[list[Any]], n: int) -> list[tuple[int, float]]:
    """At most n (first_step, mean_ms) points, each a step-weighted mean of consecutive rows."""
    if not rows:
        return []
    per = max(1, -(-len(rows) // n))
    out = []
    for i in range(0, len(rows), per):
        chunk = rows[i : i + per]
        steps = sum(r[1] for r in chunk)
        out.append((int(chunk[0][0]), sum(r[2] * r[1] for r in chunk) / steps))
    return out


def sparkline(curve: dict[str, Any], width: int = 60) -> list[str]:
    """Lines for the terminal: the curve, a marker line (^ where a window recorded) and the range."""
    pts = _bins(curve["rows"], width)
    if not pts:
        return ["step time: no steps were timed"]
    lo, hi = min(v for _, v in pts), max(v for _, v in pts)
    span = hi - lo or 1.0
    line = "".join(BARS[min(len(BARS) - 1, int((v - lo) / span * len(BARS)))] for _, v in pts)
    marks = [" "] * len(pts)
    for w in curve["windows"]:
        i = _index(pts, int(w["start_step"]))
        if i is not None:
            marks[i] = "^"
    last = curve["rows"][-1]
    end = int(last[0]) + int(last[1]) - 1
    out = [
        f"step time ({curve['clock']} clock), steps {pts[0][0]}-{end}: {lo:.3g}-{hi:.3g} ms",
        "  " + line,
    ]
    if curve["windows"]:
        out.append("  " + "".join(marks).rstrip() + "   ^ window")
    return out


def _index(pts: list[tuple[int, float]], step: int) -> Optional[int]:
    if not pts or step < pts[0][0]:
        return None
    i = 0
    for j, (first, _) in enumerate(pts):
        if first <= step:
            i = j
    return i


def svg_values(curve: dict[str, Any]) -> dict[str, Any]:
    """What report.html's curve partial draws: polyline points, window bands, axis labels (numbers only)."""
    pts = _bins(curve["rows"], WIDTH // 2)
    if not pts:
        return {}
    first, last_row = pts[0][0], curve["rows"][-1]
    end = max(int(last_row[0]) + int(last_row[1]), first + 1)
    top = max(v for _, v in pts) * 1.1 or 1.0
    plot_w = WIDTH - PAD

    def x(step: float) -> float:
        return round(PAD + (step - first) / (end - first) * plot_w, 1)

    def y(ms: float) -> float:
        return round(HEIGHT - ms / top * (HEIGHT - 10), 1)

    bands = []
    for w in curve["windows"]:
        x0 = x(int(w["start_step"]))
        x1 = max(x(int(w["start_step"]) + int(w["steps"])), x0 + 2)
        bands.append(
            {
                "x": x0,
                "w": round(x1 - x0, 1),
                "title": f"step {w['start_step']}: {w['reason']} ({w['status']})",
            }
        )
    return {
        "w": WIDTH,
        "h": HEIGHT,
        "pad": PAD,
        "points": " ".join(f"{x(s)},{y(v)}" for s, v in pts),
        "bands": bands,
        "top": f"{top:.3g}",
        "first": first,
        "end": end - 1,
        "clock": curve["clock"],
        "comparisons": list(curve.get("comparisons", [])),
        "notes": list(curve.get("notes", [])),
    }
