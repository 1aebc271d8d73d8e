"""Tune results as a terminal table, markdown and HTML."""

from __future__ import annotations

from typing import Any

from ..report._escape import md_code, md_fence, md_text
from ..report._format import num as _n

_COLS = ("candidate", "samples/s", "steps/s", "speed-up", "gain on top", "GPU busy", "loss check", "verdict")
_NUMERIC = ("samples/s", "steps/s", "speed-up", "gain on top", "GPU busy")


def rows(doc: dict[str, Any]) -> list[list[str]]:
    out = []
    for v in doc["variants"]:
        verdict = {"ok": "accepted", "rejected": "rejected", "failed": "failed", "skipped": "skipped"}[v["status"]]
        if v["reason"]:
            verdict += f": {v['reason']}"
        if v["candidate"] == "baseline":
            verdict = "baseline"
        label = v["label"] + (f" (+ {v['on_top_of']})" if v.get("on_top_of") else "")
        out.append([label, _n(v["samples_per_s"], 0), _n(v["steps_per_s"], 2), _n(v["speedup"], 2, "×"),
                    _n(v.get("gain"), 2, "×"), _n(v["gpu_util"], 0, "%"), v["loss_check"], verdict])
    return out


def noise_line(doc: dict[str, Any]) -> str:
    n = doc.get("noise") or {}
    if n.get("time_pct") is None:
        return "Run-to-run noise: not measured (the repeat of the baseline did not complete)."
    return (f"Run-to-run noise (the unmodified script twice): step time {n['time_pct']:.1f}%, "
            f"largest per-step loss difference {n['loss_rel_diff']:.2g} (relative).")


def best_line(doc: dict[str, Any]) -> str:
    best = doc["best"]
    if best:
        return f"Best safe change: {best['label']} — {best['speedup']:.2f}× faster, loss check {best['loss_check']}"
    if len(doc["variants"]) == 1:
        causes = ", ".join(doc["diagnosed_causes"]) or "none"
        return (f"Nothing to try: no candidate addresses what the diagnosis found (causes: {causes}). "
                f"`--try NAME` tries one anyway: {', '.join(candidate_names())}.")
    return "No candidate was both faster and safe."


def candidate_names() -> list[str]:
    from ._candidates import all_candidates

    return [c.name for c in all_candidates(16, cuda=True)]


def render_tune(doc: dict[str, Any], console=None) -> None:
    from rich.console import Console
    from rich.syntax import Syntax
    from rich.table import Table

    c = console or Console()
    t = Table(title=f"idlehound tune: {doc['script']} ({doc['skip']} warm-up + {doc['steps']} timed steps each)",
              title_justify="left")
    for col in _COLS:
        t.add_column(col, justify="right" if col in _NUMERIC else "left")
    for r in rows(doc):
        t.add_row(*r)
    c.print(t)
    c.print(noise_line(doc))
    c.print(best_line(doc), markup=False)
    for line in doc["diff"].splitlines():  # unwrapped and uncropped, so it can be copied
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else None
        c.print(line, style=style, markup=False, highlight=False, soft_wrap=True)
    for s in doc["snippets"]:
        c.print(Syntax(s, "python", theme="ansi_dark", background_color="default", word_wrap=True))


def tune_markdown(doc: dict[str, Any]) -> str:
    out = [f"# idlehound tune: {md_code(doc['script'])}", "",
           f"Diagnosed causes: {', '.join(doc['diagnosed_causes']) or 'none'}", "",
           "| " + " | ".join(_COLS) + " |",
           "|" + "|".join("---:" if c in _NUMERIC else "---" for c in _COLS) + "|"]
    out += ["| " + " | ".join(map(md_text, r)) + " |" for r in rows(doc)]
    out += ["", noise_line(doc)]
    out += ["", best_line(doc)]
    if doc["diff"]:
        out += ["", *md_fence(doc["diff"].rstrip(), "diff")]
    for s in doc["snippets"]:
        out += ["", *md_fence(s, "python")]
    return "\n".join(out) + "\n"


def tune_html(doc: dict[str, Any]) -> str:
    from ..report.html import render_page

    return render_page("tune.html", script=doc["script"], head=_COLS, rows=rows(doc), noise=noise_line(doc),
                       best=best_line(doc), diff=doc["diff"], snippets=doc["snippets"])
