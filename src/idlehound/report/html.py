"""Self-contained HTML pages: inline CSS and SVG, no scripts or fonts from the network.

Every page comes from a Jinja2 template in report/templates/ with autoescaping on: the functions here only
compute what to draw (numbers, labels), and the template escapes every value, trace names and numbers alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, Optional, Union

import jinja2
from markupsafe import Markup

from ..diagnose import IDLE_CAUSE_DEFINITIONS
from ..metrics import BREAKDOWN_DEFINITION, METRICS
from . import model as m
from ._curve import svg_values
from ._data import IDLE_LINES_NOTE, cause_words, range_text, where
from ._escape import html_pre, html_value
from ._format import metric_text, num
from .compare import finding_lines
from .model import as_data, typed
from .sections import cell_text

COLORS = {
    "Kernel": "#2e7d32",
    "Memcpy": "#1565c0",
    "Memset": "#5e35b1",
    "Communication": "#00838f",
    "Runtime": "#ef6c00",
    "DataLoader": "#c62828",
    "CPU Exec": "#8d6e63",
    "Other": "#9e9e9e",
    "data_loading": "#c62828",
    "allocator": "#6a1b9a",
    "sync": "#0288d1",  # far from data loading's red: the two are the commonest causes, often side by side
    "launch": "#ef6c00",
    "cpu_ops": "#8d6e63",
    "python": "#fbc02d",
}
_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1100px;
color:#222;padding:0 16px}h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd}
.headline{font-size:17px;font-weight:600;padding:12px 16px;background:#f5f5f5;border-left:5px solid #c62828}
.headline.calm{border-left-color:#9e9e9e}
.cards{display:flex;flex-wrap:wrap;gap:10px}.card{border:1px solid #ddd;border-radius:6px;padding:8px 12px;
min-width:150px}.card .v{font-size:20px;font-weight:600}.card .l{color:#555;font-size:12px}
.ideal{border-top:4px solid #2e7d32}.fair{border-top:4px solid #f9a825}.problem{border-top:4px solid #c62828}
.finding{border:1px solid #ddd;border-radius:6px;padding:10px 14px;margin:10px 0}
.sev-high{border-left:6px solid #c62828}.sev-medium{border-left:6px solid #f9a825}
.sev-low{border-left:6px solid #0277bd}
pre{background:#f6f8fa;padding:8px;overflow:auto}table{border-collapse:collapse}
td,th{padding:3px 8px;border-bottom:1px solid #eee;text-align:left}td.n{text-align:right}
.legend span{display:inline-block;margin-right:12px}.sw{display:inline-block;width:10px;height:10px;
margin-right:4px}.muted{color:#777}svg text{font:11px sans-serif}
td.better{color:#2e7d32;font-weight:600}td.worse{color:#c62828;font-weight:600}
"""


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("idlehound.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=html_value,  # control characters from a trace shown, not obeyed (report/_escape.py)
    )
    env.filters["pre"] = html_pre
    env.globals["css"] = Markup(_CSS)  # a constant of this module, the one value not escaped
    return env


def render_page(template: str, **values: Any) -> str:
    """A page from report/templates/: every value is HTML-escaped unless it is a markupsafe.Markup."""
    return _env().get_template(template).render(**values)


def render_html(doc: Union[m.Report, Mapping[str, Any]], step_curve: Optional[dict[str, Any]] = None) -> str:
    return render_page("report.html", **report_values(typed(doc, m.Report), step_curve))


def report_values(doc: m.Report, step_curve: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    """What report.html draws (a page, or with layout="_fragment.html" a notebook cell's fragment)."""
    t = doc.trace
    return dict(
        data=as_data(doc),  # the whole document, embedded as JSON for scripts that read the page
        not_checked=doc.not_checked,
        path=t.path,
        n_steps=len(t.steps),
        device=doc.device.name or "CPU",
        headline=doc.headline,
        # red only where GPU time is lost: a CPU-only trace or a run without findings is no alarm
        alarm=t.gpu_recorded and any(f.kind != "risk" for f in doc.findings),
        cards=_cards(doc),
        breakdown=_breakdown(doc),
        timeline=_timeline(doc.timeline),
        curve=_curve(doc),
        step_curve=svg_values(step_curve) if step_curve else None,  # the whole run's (report/_curve.py)
        findings=[_finding(i, f) for i, f in enumerate(doc.findings, 1)],
        lines=_lines(doc.idle_by_line),
        library_lines=_lines(doc.idle_by_library_line),
        idle_lines_note=IDLE_LINES_NOTE,
        kernels=_kernels(doc),
        memory=_memory(doc.memory),
        sections=[
            {
                "name": name,
                "title": sec.title,
                "columns": sec.columns,
                "rows": [list(map(cell_text, r)) for r in sec.rows],
            }
            for name, sec in doc.sections.items()
        ],
        notes=doc.notes,
    )


fmt_metric = metric_text  # how a metric is written on the page (tests compare this with the JSON)


def _cards(doc: m.Report) -> list[dict[str, Any]]:
    out = []
    for key, met in doc.metrics.items():
        if met.value is None:
            continue
        band = (
            ""
            if met.ideal is None
            else (
                f"ideal {'≥' if met.higher_is_better else '≤'} {met.ideal:g}, "
                f"problem {'<' if met.higher_is_better else '>'} {met.problem:g}"
            )
        )
        out.append(
            {
                "key": key,
                "status": met.status,
                "definition": METRICS[key].definition,
                "value": fmt_metric(met),
                "label": met.label,
                "band": band,
            }
        )
    return out


def _legend(keys: Iterable[str]) -> list[dict[str, str]]:
    return [{"color": COLORS.get(k, "#999"), "label": cause_words(k)} for k in keys]


_BAR_W, _BAR_H, _BAR_GAP = 760, 18, 6  # the breakdown chart: the longest step's width, a bar, the gap


def _breakdown(doc: m.Report) -> Optional[dict[str, Any]]:
    steps = doc.steps
    if not steps:
        return None
    longest = max(s.duration_ms or 0.0 for s in steps) or 1
    return {
        "definition": BREAKDOWN_DEFINITION,
        "width": _BAR_W + 170,
        "height": len(steps) * (_BAR_H + _BAR_GAP) + 10,
        "bar_h": _BAR_H,
        "bars": [_step_bar(i, s, longest) for i, s in enumerate(steps)],
        "legend": _legend([k for k, v in doc.breakdown_ms.items() if v]),
        "table": [{"key": k, "ms": f"{v:.3f}"} for k, v in doc.breakdown_ms.items() if v],
        "idle": [
            {
                "key": k,
                "label": cause_words(k),
                "definition": IDLE_CAUSE_DEFINITIONS.get(k, ""),
                "ms": f"{v:.3f}",
            }
            for k, v in doc.idle_by_cause_ms.items()
            if v
        ],
    }


def _step_bar(i: int, s: m.Step, longest: float) -> dict[str, Any]:
    y, x = 5 + i * (_BAR_H + _BAR_GAP), 80.0
    rects = []
    for cat, ms in s.breakdown_ms.items():
        if not ms:
            continue
        bw = _BAR_W * ms / longest
        rects.append(
            {
                "x": f"{x:.1f}",
                "w": f"{bw:.1f}",
                "fill": COLORS.get(cat, "#999"),
                "title": f"{cat}: {ms:.3f} ms",
            }
        )
        x += bw
    return {
        "y": y,
        "text_y": y + 13,
        "number": "-" if s.number is None else s.number,
        "rects": rects,
        "end_x": f"{x + 4:.1f}",
        "ms": f"{s.duration_ms:.2f}",
    }


def _timeline(tl: m.Timeline) -> Optional[dict[str, Any]]:
    span = ((tl.end_ns or 0) - (tl.start_ns or 0)) or 0
    if not span or not (tl.busy or tl.gaps):
        return None
    w = 880
    # (x, width, fill, idle, title) tuples: thousands of spans, unpacked in the template without lookups
    rects = [
        (
            f"{w * s / span:.2f}",
            f"{max(w * (t - s) / span, 0.3):.2f}",
            "#2e7d32",
            False,
            f"GPU busy {(t - s) / 1e3:.1f} µs",
        )
        for s, t in tl.busy or []
    ]
    rects += [
        (
            f"{w * s / span:.2f}",
            f"{max(w * (t - s) / span, 0.3):.2f}",
            COLORS.get(cause, "#bbb"),
            True,
            f"idle {(t - s) / 1e3:.1f} µs: {cause_words(cause)}",
        )
        for s, t, cause in tl.gaps or []
    ]
    return {
        "w": w,
        "h": 34,
        "rects": rects,
        "span": f"{span / 1e6:.2f}",
        "legend": _legend(list(IDLE_CAUSE_DEFINITIONS)),
    }


def _curve(doc: m.Report) -> Optional[dict[str, Any]]:
    c = doc.utilization_curve
    pts = c.samples if c else []
    if c is None or len(pts) < 2:
        return None
    w, h = 880, 120
    t_end = pts[-1][0] or 1
    sampler = doc.run.get("sampler") or {}
    return {
        "w": w,
        "h": h,
        "t_end": f"{t_end:.1f}",
        "points": " ".join(f"{w * t / t_end:.1f},{h - h * min(u, 100) / 100:.1f}" for t, u, _ in pts),
        "grid": [{"y": round(h - h * pct / 100, 1), "label": f"{pct} %"} for pct in (0, 25, 50, 75, 100)],
        "what": "GPU utilisation (NVML)" if c.source == "nvml" else "process CPU use (no NVML)",
        "sawtooth": bool(sampler.get("sawtooth")),
    }


def _finding(i: int, f: m.Finding) -> dict[str, Any]:
    loc = f.location
    at = None
    if loc:
        at = {
            "text": where(loc),
            "function": None if loc.exact else loc.function,
            "snippet": snippet_text(loc),
        }
    gain = (
        None
        if f.kind == "risk"
        else {
            "ms": f"{f.recoverable_ms_per_step:.3f}",
            "share": f"{100 * f.recoverable_share_of_step:.1f}",
            "range": range_text(f),
        }
    )
    return {
        "i": i,
        "severity": f.severity,
        "title": f.title,
        "gain": gain,
        "where": at,
        "evidence": f.evidence,
        "fix": f.fix,
        "code": f.code,
    }


def snippet_text(loc: m.Location, around: int = 3) -> str:
    """The source lines capture stored with a location (its `snippet`), the location's line marked with '>'.

    Nothing is read from disk here: a location without a stored snippet shows none.
    """
    s, n = loc.snippet, loc.line
    if s is None or not s.first_line <= n < s.first_line + len(s.lines):
        return ""
    first, lines = s.first_line, s.lines
    lo, hi = max(first, n - around), min(first + len(lines) - 1, n + around)
    return "\n".join(f"{'>' if i == n else ' '} {i:5d}  {lines[i - first]}" for i in range(lo, hi + 1))


def _lines(rows: list[m.IdleLine]) -> list[dict[str, Any]]:
    return [
        {
            "where": where(r.location),
            "cause": cause_words(r.cause),
            "ms": f"{r.idle_ms_per_step:.3f}",
            "gaps": r.gaps,
        }
        for r in rows
    ]


def _kernels(doc: m.Report) -> list[dict[str, Any]]:
    return [
        {
            "name": g.name[:110],
            "count": f"{g.count_per_step:g}",
            "ms": f"{g.ms_per_step:.3f}",
            "precision": g.precision or "",
        }
        for g in doc.kernels.top
    ]


def _memory(mem: m.Memory) -> Optional[dict[str, Any]]:
    if not mem.recorded:
        return None
    pts = mem.curve
    curve = None
    if len(pts) >= 2:
        w, h = 880, 120
        t_end = pts[-1][0] or 1
        top = max(p[1] for p in pts) or 1
        curve = {
            "w": w,
            "h": h,
            "t_end": f"{t_end / 1e6:.1f}",
            "top": f"{top:.2f}",
            "points": " ".join(f"{w * t / t_end:.1f},{h - h * b / top:.1f}" for t, b in pts),
        }
    return {
        "peak_allocated_gib": mem.peak_allocated_gib,
        "peak_reserved_gib": mem.peak_reserved_gib,
        "capacity_gib": mem.capacity_gib,
        "allocs_per_step": mem.allocs_per_step,
        "empty_cache_calls": mem.empty_cache_calls,
        "curve": curve,
    }


def render_compare_html(doc: Union[m.Compare, Mapping[str, Any]]) -> str:
    """Two runs side by side: bars of each one's step, a table per section (units, B better or worse)."""
    from .compare import SECTIONS, cells, judgement, rows_of

    c = typed(doc, m.Compare)
    sections = [
        {
            "title": title,
            "rows": [
                {"label": x.label, "cells": cells(x), "mark": judgement(key, x)} for x in rows_of(c, key)
            ],
        }
        for title, key in SECTIONS
        if rows_of(c, key)
    ]
    items = finding_lines(c)  # the page's template escapes them
    return render_page(
        "compare.html", a=c.a, b=c.b, sections=sections, findings=items, chart=_compare_chart(c)
    )


def _compare_chart(c: m.Compare) -> dict[str, Any]:
    """A's and B's step as stacked bars of the breakdown categories, on one ms scale."""
    rows = c.breakdown_ms
    sides = {"a": [r.a or 0.0 for r in rows], "b": [r.b or 0.0 for r in rows]}
    total = {side: sum(ms) for side, ms in sides.items()}
    scale = max(total.values()) or 1.0
    bars = []
    for side, ms in sides.items():
        x, parts = 0.0, []
        for r, v in zip(rows, ms):
            w = 100.0 * v / scale
            if w > 0:
                color = COLORS.get(r.label, "#9e9e9e")
                parts.append({"x": round(x, 3), "w": round(w, 3), "color": color, "label": r.label})
                x += w
        bars.append({"side": side.upper(), "parts": parts, "ms": num(total[side], unit=" ms")})
    legend = [{"label": r.label, "color": COLORS.get(r.label, "#9e9e9e")} for r in rows]
    return {"bars": bars, "legend": legend}


_LADDER_HEAD = (
    "rung",
    "samples/s",
    "ms/step",
    "GPU busy",
    "NVML util",
    "peak GiB",
    "speed-up",
    "% of ceiling",
    "top remaining finding",
)


def render_ladder_html(doc: Union[m.Ladder, Mapping[str, Any]]) -> str:
    """Throughput per rung as bars against the in-memory ceiling line, and the ladder table."""
    from .ladder import ladder_table_rows

    lad = typed(doc, m.Ladder)
    rungs = [r for r in lad.rungs if r.name != "ceiling"]
    ceiling = next((r.samples_per_s for r in lad.rungs if r.name == "ceiling"), None)
    top = max([r.samples_per_s or 0 for r in rungs] + [ceiling or 0]) or 1
    w, bar, gap = 640, 22, 8
    h = len(rungs) * (bar + gap) + 20
    bars = [_rung_bar(i, r, top, w, bar + gap) for i, r in enumerate(rungs)]
    line = None
    if ceiling:
        x = 330 + w * 0.95 * ceiling / top
        line = {"x": f"{x:.1f}", "text_x": f"{x + 4:.1f}", "rate": f"{ceiling:,.0f}"}
    return render_page(
        "ladder.html",
        device=lad.device,
        width=w + 360,
        height=h,
        bar_h=bar,
        bars=bars,
        ceiling=line,
        head=_LADDER_HEAD,
        rows=ladder_table_rows(lad),
    )


def _rung_bar(i: int, r: m.Rung, top: float, w: int, pitch: int) -> dict[str, Any]:
    y = 4 + i * pitch
    b: dict[str, Any] = {
        "y": y,
        "text_y": y + 15,
        "label": r.label[:46],
        "status": r.status,
        "reason": r.reason,
        "bar": None,
    }
    if r.samples_per_s:
        bw = w * r.samples_per_s / top * 0.95
        b["bar"] = {"w": f"{bw:.1f}", "end_x": f"{334 + bw:.1f}", "rate": f"{r.samples_per_s:,.0f}"}
    return b
