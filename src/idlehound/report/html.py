"""A self-contained HTML report: inline CSS and SVG drawn here, no scripts or fonts from the network."""

from __future__ import annotations

import html
import json
from typing import Any

from ..metrics import BREAKDOWN_DEFINITION, IDLE_CAUSES, METRICS
from ._data import CAUSE_WORDS
from ._format import metric_text, num

COLORS = {
    "Kernel": "#2e7d32", "Memcpy": "#1565c0", "Memset": "#5e35b1", "Communication": "#00838f",
    "Runtime": "#ef6c00", "DataLoader": "#c62828", "CPU Exec": "#8d6e63", "Other": "#9e9e9e",
    "data_loading": "#c62828", "allocator": "#6a1b9a", "sync": "#ad1457", "launch": "#ef6c00", "cpu_ops": "#8d6e63", "python": "#fbc02d",
}
_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1100px;
color:#222;padding:0 16px}h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd}
.headline{font-size:17px;font-weight:600;padding:12px 16px;background:#f5f5f5;border-left:5px solid #c62828}
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
"""


def e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def render_html(doc: dict[str, Any]) -> str:
    t = doc["trace"]
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>idlehound · {e(t['path'])}</title><style>{_CSS}</style></head><body>",
        f"<h1>idlehound report</h1><div class='muted'>{e(t['path'])} · {len(t['steps'])} step(s) · "
        f"{e(doc['device']['name'] or 'CPU')}</div>",
        f"<p class='headline' id='headline'>{e(doc['headline'])}</p>",
        _cards(doc), _breakdown(doc), _timeline(doc), _curve(doc), _findings(doc), _lines(doc),
        _kernels(doc), _memory(doc), _notes(doc),
        f"<script type='application/json' id='idlehound-data'>{_json_for_html(doc)}</script>",
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p)


def _json_for_html(doc: dict[str, Any]) -> str:
    return json.dumps(doc).replace("</", "<\\/")


fmt_metric = metric_text  # how a metric is written on the page (tests compare this with the JSON)


def _cards(doc: dict[str, Any]) -> str:
    out = ["<h2>Metrics per step</h2><div class='cards'>"]
    for key, m in doc["metrics"].items():
        if m["value"] is None:
            continue
        band = "" if m["ideal"] is None else (f"ideal {'≥' if m['higher_is_better'] else '≤'} {m['ideal']:g}, "
                                              f"problem {'<' if m['higher_is_better'] else '>'} {m['problem']:g}")
        out.append(f"<div class='card {e(m['status'])}' title='{e(METRICS[key].definition)}' data-metric='{e(key)}'>"
                   f"<div class='v'>{e(fmt_metric(m))}</div><div class='l'>{e(m['label'])}</div>"
                   f"<div class='l'>{e(band)}</div></div>")
    out.append("</div>")
    return "".join(out)


def _legend(keys) -> str:
    return "<div class='legend'>" + "".join(
        f"<span><i class='sw' style='background:{COLORS.get(k, '#999')}'></i>{e(CAUSE_WORDS.get(k, k))}</span>"
        for k in keys) + "</div>"


def _breakdown(doc: dict[str, Any]) -> str:
    steps = doc["steps"]
    if not steps:
        return ""
    w, bar_h, gap = 760, 18, 6
    longest = max(s["duration_ms"] for s in steps) or 1
    h = len(steps) * (bar_h + gap) + 10
    svg = [f"<svg id='breakdown-chart' width='{w + 170}' height='{h}' role='img'>"]
    for i, s in enumerate(steps):
        y, x = 5 + i * (bar_h + gap), 80.0
        svg.append(f"<text x='0' y='{y + 13}'>step {e(s['number'] if s['number'] is not None else '-')}</text>")
        for cat, ms in s["breakdown_ms"].items():
            if not ms:
                continue
            bw = w * ms / longest
            svg.append(f"<rect x='{x:.1f}' y='{y}' width='{bw:.1f}' height='{bar_h}' fill='{COLORS.get(cat)}'>"
                       f"<title>{e(cat)}: {ms:.3f} ms</title></rect>")
            x += bw
        svg.append(f"<text x='{x + 4:.1f}' y='{y + 13}'>{s['duration_ms']:.2f} ms</text>")
    svg.append("</svg>")
    cats = [k for k in doc["breakdown_ms"] if doc["breakdown_ms"][k]]
    table = "".join(f"<tr><td>{e(k)}</td><td class='n' data-breakdown='{e(k)}'>{v:.3f}</td></tr>"
                    for k, v in doc["breakdown_ms"].items() if v)
    idle = "".join(f"<tr title='{e(IDLE_CAUSES.get(k, ''))}'><td>{e(CAUSE_WORDS.get(k, k))}</td>"
                   f"<td class='n' data-idle='{e(k)}'>{v:.3f}</td></tr>"
                   for k, v in doc["idle_by_cause_ms"].items() if v)
    return (f"<h2 title='{e(BREAKDOWN_DEFINITION)}'>Step time breakdown</h2>{_legend(cats)}{''.join(svg)}"
            f"<table><tr><th>category</th><th>ms per step</th></tr>{table}</table>"
            + (f"<h2>GPU idle by cause</h2><table><tr><th>cause</th><th>ms per step</th></tr>{idle}</table>"
               if idle else ""))


def _timeline(doc: dict[str, Any]) -> str:
    tl = doc.get("timeline") or {}
    span = (tl.get("end_ns", 0) - tl.get("start_ns", 0)) or 0
    if not span or not (tl.get("busy") or tl.get("gaps")):
        return ""
    w, h = 880, 34
    svg = [f"<svg id='timeline' viewBox='0 0 {w} {h + 16}' width='100%' preserveAspectRatio='none' role='img'>"]
    for s, t in tl.get("busy", []):
        svg.append(f"<rect x='{w * s / span:.2f}' y='2' width='{max(w * (t - s) / span, 0.3):.2f}' height='{h}' "
                   f"fill='#2e7d32'><title>GPU busy {(t - s) / 1e3:.1f} µs</title></rect>")
    for s, t, cause in tl.get("gaps", []):
        svg.append(f"<rect x='{w * s / span:.2f}' y='2' width='{max(w * (t - s) / span, 0.3):.2f}' height='{h}' "
                   f"fill='{COLORS.get(cause, '#bbb')}' opacity='0.8'><title>idle {(t - s) / 1e3:.1f} µs: "
                   f"{e(CAUSE_WORDS.get(cause, cause))}</title></rect>")
    svg.append(f"<text x='0' y='{h + 14}'>0</text><text x='{w - 60}' y='{h + 14}'>{span / 1e6:.2f} ms</text></svg>")
    return ("<h2>GPU timeline (first steps): busy in green, idle coloured by cause</h2>"
            f"{_legend(list(IDLE_CAUSES))}"
            "<div id='timeline-box' style='overflow-x:auto'>" + "".join(svg) + "</div>"
            "<label class='muted'>zoom <input id='timeline-zoom' type='range' min='1' max='40' value='1'></label> "
            "<span class='muted'>hover a span for its length and cause; scroll sideways when zoomed.</span>"
            "<script>(function(){var z=document.getElementById('timeline-zoom'),"
            "s=document.getElementById('timeline');z.addEventListener('input',function(){"
            "s.setAttribute('width',(100*z.value)+'%');});})();</script>")


def _curve(doc: dict[str, Any]) -> str:
    c = doc.get("utilization_curve") or {}
    pts = c.get("samples") or []
    if len(pts) < 2:
        return ""
    w, h = 880, 120
    t_end = pts[-1][0] or 1
    path = " ".join(f"{w * t / t_end:.1f},{h - h * min(u, 100) / 100:.1f}" for t, u, _ in pts)
    what = "GPU utilisation (NVML)" if c.get("source") == "nvml" else "process CPU use (no NVML)"
    saw = (doc.get("run") or {}).get("sampler", {}).get("sawtooth")
    return (f"<h2>{e(what)} over the whole run</h2>"
            f"<svg id='util-curve' viewBox='0 0 {w} {h + 14}' width='100%' role='img'>"
            f"<polyline fill='none' stroke='#1565c0' stroke-width='1.2' points='{path}'/>"
            f"<text x='0' y='{h + 12}'>0 s</text><text x='{w - 50}' y='{h + 12}'>{t_end:.1f} s</text>"
            f"<text x='{w - 40}' y='10'>100 %</text></svg>"
            + ("<p><b>Saw-tooth:</b> busy bursts alternate with idle stretches, the mark of a starved input "
               "pipeline.</p>" if saw else ""))


def _findings(doc: dict[str, Any]) -> str:
    out = ["<h2>Findings, most recoverable first</h2>"]
    if not doc["findings"]:
        out.append("<p id='no-findings'>No findings: nothing explains a significant share of the step.</p>")
    for i, f in enumerate(doc["findings"], 1):
        loc = f["location"]
        where = ""
        if loc:
            where = f"<div>at <code>{e(loc['file'])}:{loc['line']}</code>" + (
                "" if loc["exact"] else f" <span class='muted'>(in {e(loc['function'])}, def line: approximate)</span>")
            where += "</div>" + _snippet(loc)
        gain = "" if f["kind"] == "risk" else (
            f" — up to <b data-finding-ms='{i}'>{f['recoverable_ms_per_step']:.3f}</b> ms per step "
            f"({100 * f['recoverable_share_of_step']:.1f}% of the step)")
        ev = "".join(f"<li>{e(x)}</li>" for x in f["evidence"])
        code = f"<pre><code>{e(f['code'])}</code></pre>" if f["code"] else ""
        out.append(f"<div class='finding sev-{e(f['severity'])}'><b>{i}. [{e(f['severity'])}] {e(f['title'])}</b>"
                   f"{gain}{where}<ul>{ev}</ul><div><b>Fix:</b> {e(f['fix'])}</div>{code}</div>")
    return "".join(out)


def _snippet(loc: dict[str, Any]) -> str:
    """The source lines around the location, when the file is readable from here."""
    from pathlib import Path

    p = Path(loc.get("path") or loc["file"])
    try:
        lines = p.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    n = loc["line"]
    lo, hi = max(1, n - 3), min(len(lines), n + 3)
    body = "\n".join(f"{'>' if i == n else ' '} {i:5d}  {lines[i - 1]}" for i in range(lo, hi + 1))
    return f"<pre class='snippet'>{e(body)}</pre>"


def _lines(doc: dict[str, Any]) -> str:
    rows = doc["idle_by_line"]
    if not rows:
        return ""
    body = "".join(
        f"<tr><td><code>{e(r['location']['file'] + ':' + str(r['location']['line']) if r['location'] else '(no user frame)')}"
        f"</code></td><td>{e(CAUSE_WORDS.get(r['cause'], r['cause']))}</td><td class='n'>{r['idle_ms_per_step']:.3f}</td>"
        f"<td class='n'>{r['gaps']}</td></tr>" for r in rows)
    return ("<h2>GPU idle by source line</h2><table><tr><th>line</th><th>cause</th><th>ms per step</th>"
            f"<th>gaps</th></tr>{body}</table>")


def _kernels(doc: dict[str, Any]) -> str:
    k = doc["kernels"]
    if not k["top"]:
        return ""
    body = "".join(f"<tr><td><code>{e(g['name'][:110])}</code></td><td class='n'>{g['count_per_step']:g}</td>"
                   f"<td class='n'>{g['ms_per_step']:.3f}</td><td>{e(g['precision'] or '')}</td></tr>"
                   for g in k["top"])
    return ("<h2>Top kernels</h2><table><tr><th>kernel</th><th>per step</th><th>ms per step</th>"
            f"<th>matmul precision</th></tr>{body}</table>")


def _memory(doc: dict[str, Any]) -> str:
    m = doc["memory"]
    if not m["recorded"]:
        return ""
    text = (f"<h2>Memory</h2><p>Peak allocated {m['peak_allocated_gib']} GiB, peak reserved "
            f"{m['peak_reserved_gib']} GiB of {m['capacity_gib']} GiB; {m['allocs_per_step']} allocations per step; "
            f"{m['empty_cache_calls']} empty_cache calls.</p>")
    pts = m.get("curve") or []
    if len(pts) < 2:
        return text
    w, h = 880, 120
    t_end = pts[-1][0] or 1
    top = max(p[1] for p in pts) or 1
    line = " ".join(f"{w * t / t_end:.1f},{h - h * b / top:.1f}" for t, b in pts)
    return (text + f"<svg id='memory-curve' viewBox='0 0 {w} {h + 14}' width='100%' role='img'>"
            f"<polyline fill='none' stroke='#6a1b9a' stroke-width='1.2' points='{line}'/>"
            f"<text x='0' y='{h + 12}'>0 ms</text><text x='{w - 80}' y='{h + 12}'>{t_end / 1e6:.1f} ms</text>"
            f"<text x='{w - 80}' y='10'>{top:.2f} GiB</text></svg>"
            "<div class='muted'>Memory allocated by PyTorch over the profiled steps.</div>")


def _notes(doc: dict[str, Any]) -> str:
    if not doc["notes"]:
        return ""
    return "<h2>Notes</h2><ul>" + "".join(f"<li>{e(n)}</li>" for n in doc["notes"]) + "</ul>"


def render_compare_html(c: dict[str, Any]) -> str:
    """Two runs side by side: a table per section and bars for the breakdown of each."""
    parts = ["<!doctype html><html lang='en'><head><meta charset='utf-8'><title>idlehound compare</title>",
             f"<style>{_CSS}</style></head><body><h1>idlehound compare</h1>",
             f"<p><b>A</b> {e(c['a']['path'])}<br>{e(c['a']['headline'])}</p>",
             f"<p><b>B</b> {e(c['b']['path'])}<br>{e(c['b']['headline'])}</p>"]
    for title, key in (("Metrics", "metrics"), ("Step time breakdown (ms per step)", "breakdown_ms"),
                       ("GPU idle by cause (ms per step)", "idle_by_cause_ms"), ("Top kernels", "kernels_ms"),
                       ("Memory", "memory")):
        if not c[key]:
            continue
        rows = "".join(f"<tr><td>{e(x['label'])}</td><td class='n'>{num(x['a'])}</td><td class='n'>{num(x['b'])}"
                       f"</td><td class='n'>{num(x['delta'], signed=True)}</td><td class='n'>{num(x['delta_pct'], signed=True)}"
                       "</td></tr>" for x in c[key])
        parts.append(f"<h2>{title}</h2><table><tr><th></th><th>A</th><th>B</th><th>Δ</th><th>Δ %</th></tr>{rows}"
                     "</table>")
    items = [f"<li>gone: {e(f['title'])} ({f['ms']:.3f} ms per step in A)</li>" for f in c["findings_gone"]]
    items += [f"<li>new: {e(f['title'])} ({f['ms']:.3f} ms per step in B)</li>" for f in c["findings_new"]]
    items += [f"<li>still there: {e(f['title'])} ({f['a_ms']:.3f} → {f['b_ms']:.3f} ms per step)</li>"
              for f in c["findings_kept"]]
    parts.append("<h2>Findings</h2><ul>" + "".join(items) + "</ul></body></html>")
    return "\n".join(parts)


def render_ladder_html(doc: dict[str, Any]) -> str:
    """Throughput per rung as bars against the in-memory ceiling line, and the ladder table."""
    rungs = [r for r in doc["rungs"] if r["name"] != "ceiling"]
    ceiling = next((r["samples_per_s"] for r in doc["rungs"] if r["name"] == "ceiling"), None)
    top = max([r["samples_per_s"] or 0 for r in rungs] + [ceiling or 0]) or 1
    w, bar, gap = 640, 22, 8
    h = len(rungs) * (bar + gap) + 20
    svg = [f"<svg id='ladder-chart' width='{w + 360}' height='{h}' role='img'>"]
    for i, r in enumerate(rungs):
        y = 4 + i * (bar + gap)
        svg.append(f"<text x='0' y='{y + 15}'>{e(r['label'][:46])}</text>")
        if r["samples_per_s"]:
            bw = w * r["samples_per_s"] / top
            svg.append(f"<rect x='330' y='{y}' width='{bw * 0.95:.1f}' height='{bar}' fill='#2e7d32'>"
                       f"<title>{r['samples_per_s']:,.0f} samples/s</title></rect>"
                       f"<text x='{334 + bw * 0.95:.1f}' y='{y + 15}'>{r['samples_per_s']:,.0f}/s</text>")
        else:
            svg.append(f"<text x='334' y='{y + 15}' fill='#777'>{e(r['status'])}: {e(r['reason'])}</text>")
    if ceiling:
        x = 330 + w * 0.95 * ceiling / top
        svg.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='0' y2='{h}' stroke='#c62828' stroke-dasharray='4'/>"
                   f"<text x='{x + 4:.1f}' y='{h - 4}' fill='#c62828'>ceiling {ceiling:,.0f}/s</text>")
    svg.append("</svg>")
    from .ladder import ladder_table_rows

    rows = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in ladder_table_rows(doc))
    head = "".join(f"<th>{c}</th>" for c in ("rung", "samples/s", "ms/step", "GPU busy", "NVML util", "peak GiB",
                                              "speed-up", "% of ceiling", "top remaining finding"))
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>idlehound ladder</title>"
            f"<style>{_CSS}</style></head><body><h1>Optimisation ladder on {e(doc['device'])}</h1>"
            f"{''.join(svg)}<table><tr>{head}</tr>{rows}</table></body></html>")
