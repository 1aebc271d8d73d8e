"""Tune results as a terminal table, markdown and HTML."""

from __future__ import annotations

from typing import Any

from ..report._format import num as _n

_COLS = ("candidate", "samples/s", "steps/s", "speed-up", "GPU busy", "loss check", "verdict")


def rows(doc: dict[str, Any]) -> list[list[str]]:
    out = []
    for v in doc["variants"]:
        verdict = {"ok": "accepted", "rejected": "rejected", "failed": "failed", "skipped": "skipped"}[v["status"]]
        if v["reason"]:
            verdict += f": {v['reason']}"
        if v["candidate"] == "baseline":
            verdict = "baseline"
        out.append([v["label"], _n(v["samples_per_s"], 0), _n(v["steps_per_s"], 2), _n(v["speedup"], 2, "×"),
                    _n(v["gpu_util"], 0, "%"), v["loss_check"], verdict])
    return out


def render_tune(doc: dict[str, Any], console=None) -> None:
    from rich.console import Console
    from rich.syntax import Syntax
    from rich.table import Table

    c = console or Console()
    t = Table(title=f"idlehound tune: {doc['script']} ({doc['skip']} warm-up + {doc['steps']} timed steps each)",
              title_justify="left")
    for col in _COLS:
        t.add_column(col, justify="right" if col in ("samples/s", "steps/s", "speed-up", "GPU busy") else "left")
    for r in rows(doc):
        t.add_row(*r)
    c.print(t)
    best = doc["best"]
    if best:
        c.print(f"[bold]Best safe change:[/] {best['label']} — {best['speedup']:.2f}× faster, loss check "
                f"{best['loss_check']}")
    else:
        c.print("No candidate was both faster and safe.")
    if doc["diff"]:
        c.print(Syntax(doc["diff"], "diff", theme="ansi_dark", background_color="default"))
    for s in doc["snippets"]:
        c.print(Syntax(s, "python", theme="ansi_dark", background_color="default"))


def tune_markdown(doc: dict[str, Any]) -> str:
    out = [f"# idlehound tune: `{doc['script']}`", "",
           f"Diagnosed causes: {', '.join(doc['diagnosed_causes']) or 'none'}", "",
           "| " + " | ".join(_COLS) + " |", "|---|---:|---:|---:|---:|---|---|"]
    out += ["| " + " | ".join(r) + " |" for r in rows(doc)]
    if doc["best"]:
        out += ["", f"**Best safe change:** {doc['best']['label']} ({doc['best']['speedup']:.2f}×)"]
    if doc["diff"]:
        out += ["", "```diff", doc["diff"].rstrip(), "```"]
    for s in doc["snippets"]:
        out += ["", "```python", s, "```"]
    return "\n".join(out) + "\n"


def tune_html(doc: dict[str, Any]) -> str:
    from ..report.html import _CSS, e

    head = "".join(f"<th>{c}</th>" for c in _COLS)
    body = "".join("<tr>" + "".join(f"<td>{e(x)}</td>" for x in r) + "</tr>" for r in rows(doc))
    best = (f"<p><b>Best safe change:</b> {e(doc['best']['label'])} ({doc['best']['speedup']:.2f}×)</p>"
            if doc["best"] else "<p>No candidate was both faster and safe.</p>")
    diff = f"<pre>{e(doc['diff'])}</pre>" if doc["diff"] else ""
    snippets = "".join(f"<pre>{e(s)}</pre>" for s in doc["snippets"])
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>idlehound tune</title>"
            f"<style>{_CSS}</style></head><body><h1>idlehound tune: {e(doc['script'])}</h1>"
            f"<table><tr>{head}</tr>{body}</table>{best}{diff}{snippets}</body></html>")
