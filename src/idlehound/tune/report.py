"""Tune results as a terminal table, markdown and HTML."""

from __future__ import annotations

import re
from typing import Any

from ..report import md_code, md_fence, md_text
from ..report import num as _n

_COLS = ("candidate", "samples/s", "steps/s", "speed-up", "gain on top", "GPU busy", "loss check", "verdict")
# schema version 2: each speed-up with its 95% interval and the runs behind it
_COLS2 = (
    "candidate",
    "samples/s",
    "steps/s",
    "speed-up",
    "95% interval",
    "gain on top",
    "GPU busy",
    "runs",
    "loss check",
    "verdict",
)
# schema version 3: the replay's prediction beside the measurement
_COLS3 = _COLS2[:5] + ("predicted / measured",) + _COLS2[5:]
_NUMERIC = (
    "samples/s",
    "steps/s",
    "speed-up",
    "95% interval",
    "gain on top",
    "GPU busy",
    "runs",
    "95% CI",
    "gain",
    "GPU",
)
# the terminal: short names (explained under the table), so the table fits 80 columns
_TERMINAL = ("change", "steps/s", "speed-up", "95% CI", "gain", "GPU", "verdict")


def columns(doc: dict[str, Any]) -> tuple[str, ...]:
    version = doc.get("schema_version", 1)
    return _COLS3 if version >= 3 else _COLS2 if version >= 2 else _COLS


def _ci(ci: Any) -> str:
    if not ci:
        return "—"
    return f"{ci[0]:.2f}–{ci[1]:.2f}×" if ci[1] < 100 else "too wide"


def verdict(v: dict[str, Any]) -> str:
    """What the table says of a variant; "accepted" only for a change measurably faster with the math kept."""
    if v["candidate"] == "baseline":
        return "baseline"
    status, effect = v["status"], v.get("effect")
    text = {
        "rejected": "rejected",
        "failed": "failed",
        "skipped": "skipped",
        "not applicable": "not applicable",
    }.get(status, "accepted")
    interval = (v.get("gain_ci") if v.get("on_top_of") else v.get("speedup_ci")) or []
    if status == "ok" and effect is not None:  # version 2
        text = (
            "accepted"
            if effect == "faster" and (v.get("speedup_ci") or [0])[0] > 1.0
            else "slower: not kept"
            if effect == "slower"
            else f"not proven faster: interval {_ci(interval)}"
            if interval and interval[0] > 1.0  # faster, but not by the margin the interval must clear
            else "no measurable effect"
        )
    cut = (
        v.get("warmup_note") or ""
    )  # a warm-up cut to fit a short script qualifies the figure; a raise does not
    reason = _diverged_words(v["reason"]) if status == "rejected" and v["reason"] else v["reason"]
    return (
        text
        + (f": {reason}" if reason else "")
        + (f" ({cut})" if cut.startswith("warm-up ") and ", not " in cut else "")
    )


_DIVERGED = re.compile(r"^(?P<check>.+?): diverged at step (?P<step>\d+): (?P<was>\S+) vs (?P<got>\S+)$")


def _diverged_words(reason: str) -> str:
    """ "bitwise equal: diverged at step 111: 2.3 vs 2.4" as a sentence: what changed, then the check it failed."""
    m = _DIVERGED.match(reason)
    if not m:
        return reason
    return (
        f"the losses changed at step {m['step']} ({m['was']} as written, {m['got']} with the change; "
        f"check: {m['check']})"
    )


def _pct(x: float) -> str:
    return f"{100 * (x - 1):+.0f}%"


def versus(v: dict[str, Any]) -> str:
    """The replay's predicted gain beside the measured one, over the same reference (the stack below, if any)."""
    if v["candidate"] == "baseline":
        return "—"
    on_top = bool(v.get("on_top_of"))
    got, ci = (v.get("gain"), v.get("gain_ci")) if on_top else (v.get("speedup"), v.get("speedup_ci"))
    pred = f"predicted {_pct(v['predicted'])}" if v.get("predicted") is not None else "no prediction"
    if got is None:
        return pred + (" / not measured" if v.get("predicted") is not None else "")
    interval = f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci and ci[1] < 100 else ""
    return f"{pred} / measured {_pct(got)}{interval}"


def _cell(v: dict[str, Any], col: str) -> str:
    label = v["label"] + (f" (+ {v['on_top_of']})" if v.get("on_top_of") else "")
    name = v["candidate"] + (f" on {v['on_top_of']}" if v.get("on_top_of") else "")
    return {
        "candidate": label,
        "change": name,
        "samples/s": _n(v["samples_per_s"], 0),
        "steps/s": _n(v["steps_per_s"], 2),
        "speed-up": _n(v["speedup"], 2, "×"),
        "95% interval": _ci(v.get("speedup_ci")),
        "gain on top": _n(v.get("gain"), 2, "×") + (f" ({_ci(v['gain_ci'])})" if v.get("gain_ci") else ""),
        "GPU busy": _n(v["gpu_util"], 0, "%"),
        "95% CI": _ci(v.get("speedup_ci")),
        "gain": _n(v.get("gain"), 2, "×"),
        "GPU": _n(v["gpu_util"], 0, "%"),
        "runs": str(v.get("rounds") or "—"),
        "loss check": v["loss_check"],
        "verdict": verdict(v),
        "predicted / measured": versus(v),
    }[col]


def rows(doc: dict[str, Any], cols: tuple[str, ...] = ()) -> list[list[str]]:
    return [[_cell(v, c) for c in cols or columns(doc)] for v in doc["variants"]]


def legend(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """Each short name of the terminal table with what it changes (and how its warm-up was set, if not --skip)."""
    out: dict[str, str] = {}
    for v in doc["variants"][1:]:
        note = v.get("warmup_note") or ""
        seen = (
            f"; {versus(v)}"
            if doc.get("schema_version", 1) >= 3
            and (v["status"] in ("ok", "rejected") or v.get("predicted") is not None)
            else ""
        )
        out.setdefault(v["candidate"], v["label"] + seen + (f"; {note}" if note else ""))
    return list(out.items())


def noise_line(doc: dict[str, Any]) -> str:
    n = doc.get("noise") or {}
    if n.get("time_pct") is None:
        return "Run-to-run noise: not measured (the repeat of the baseline did not complete)."
    line = (
        f"Run-to-run noise (the unmodified script twice): step time {n['time_pct']:.1f}%, "
        f"largest per-step loss difference {n['loss_rel_diff']:.2g} (relative)."
    )
    drift = doc.get("drift_pct")
    if drift is not None:
        how = f"{abs(drift):.1f}% {'slower' if drift > 0 else 'faster'} than" if drift else "as fast as"
        line += (
            f" Drift: the baseline's last run was {how} its first; each run is compared with the reference "
            f"runs around it, so the drift does not count as a speed-up."
        )
    return line


def prediction_line(doc: dict[str, Any]) -> str:
    """How the candidates were ordered (version 3); "" for older documents."""
    if doc.get("schema_version", 1) < 3:
        return ""
    p = doc.get("prediction") or {}
    line = (
        f"Order: largest predicted gain first, from the replay of the baseline's profile (step "
        f"{p['step_ms']:.2f} ms); candidates without a prediction after."
        if p.get("available")
        else "Order: as listed (no replay of a GPU profile to predict gains from)."
    )
    if doc.get("budget_s") is not None:
        line += f" Budget {doc['budget_s']:g} s"
        line += _used(doc["budget_s"], doc.get("wall_s"))
    return line


def _used(budget: float, wall: Any) -> str:
    if wall is None:
        return "."
    if wall <= budget:
        return f", used {wall:.0f} s."
    return (
        f", used {wall:.0f} s ({100 * (wall / budget - 1):.0f}% over: a run under way is finished, not cut)."
    )


def best_line(doc: dict[str, Any]) -> str:
    best = doc["best"]
    if best:
        ci = f" (95% interval {_ci(best['speedup_ci'])})" if best.get("speedup_ci") else ""
        return (
            f"Best safe change: {best['label']} — {best['speedup']:.2f}× faster{ci}, "
            f"loss check {best['loss_check']}"
        )
    if len(doc["variants"]) == 1:
        causes = ", ".join(doc["diagnosed_causes"]) or "none"
        return (
            f"Nothing to try: no candidate addresses what the diagnosis found (causes: {causes}). "
            f"`--try NAME` tries one anyway: {', '.join(candidate_names())}."
        )
    if doc.get("schema_version", 1) >= 2:
        return (
            f"No change was measurably faster with the losses kept (a 95% interval above "
            f"{1 + doc.get('margin', 0.03):.2f}×): keep the script as it is."
        )
    return "No candidate was both faster and safe."


def candidate_names() -> list[str]:
    from ._candidates import all_candidates

    return [c.name for c in all_candidates(16, cuda=True)]


def render_tune(doc: dict[str, Any], console=None) -> None:
    from rich import box
    from rich.console import Console
    from rich.syntax import Syntax
    from rich.table import Table
    from rich.text import Text

    from ..report import inert

    c = console or Console()
    doc = inert(doc)  # script names, errors and code from the run: shown as text, control characters visible
    c.print(
        f"idlehound tune: {doc['script']} ({doc['skip']} warm-up + {doc['steps']} timed steps each)",
        markup=False,
        highlight=False,
    )
    cols = _TERMINAL
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    for col in cols:  # the numbers never wrap; words of the headers are never cropped
        t.add_column(
            col,
            justify="right" if col in _NUMERIC else "left",
            no_wrap=col in _NUMERIC,
            min_width=None if col in _NUMERIC else 12,
            ratio=1 if col in ("change", "verdict") else None,
            overflow="fold",
        )
    for r in rows(doc, cols):
        t.add_row(*(Text(x) for x in r))
    c.print(t)
    for name, label in legend(doc):
        c.print(f"  {name}: {label}", markup=False, highlight=False)
    c.print(noise_line(doc), markup=False, highlight=False)
    if prediction_line(doc):
        c.print(prediction_line(doc), markup=False, highlight=False)
    c.print(best_line(doc), markup=False)
    if doc.get("diff_check"):
        c.print(f"Diff check: {doc['diff_check']}", markup=False, highlight=False)
    for line in doc["diff"].splitlines():  # unwrapped and uncropped, so it can be copied
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else None
        c.print(line, style=style, markup=False, highlight=False, soft_wrap=True)
    for s in doc["snippets"]:
        c.print(Syntax(s, "python", theme="ansi_dark", background_color="default", word_wrap=True))


def tune_markdown(doc: dict[str, Any]) -> str:
    out = [
        f"# idlehound tune: {md_code(doc['script'])}",
        "",
        f"Diagnosed causes: {', '.join(doc['diagnosed_causes']) or 'none'}",
        "",
        "| " + " | ".join(columns(doc)) + " |",
        "|" + "|".join("---:" if c in _NUMERIC else "---" for c in columns(doc)) + "|",
    ]
    out += ["| " + " | ".join(map(md_text, r)) + " |" for r in rows(doc)]
    notes = [
        f"- {md_text(v['candidate'])}: {md_text(v['warmup_note'])}"
        for v in doc["variants"]
        if v.get("warmup_note")
    ]
    out += ["", "Warm-up:", *notes] if notes else []
    out += ["", noise_line(doc)]
    out += ["", prediction_line(doc)] if prediction_line(doc) else []
    out += ["", best_line(doc)]
    if doc.get("diff_check"):
        out += ["", f"Diff check: {md_text(doc['diff_check'])}"]
    if doc["diff"]:
        out += ["", *md_fence(doc["diff"].rstrip(), "diff")]
    for s in doc["snippets"]:
        out += ["", *md_fence(s, "python")]
    return "\n".join(out) + "\n"


def tune_html(doc: dict[str, Any]) -> str:
    from ..report import render_page

    return render_page(
        "tune.html",
        script=doc["script"],
        head=columns(doc),
        rows=rows(doc),
        noise=" ".join(filter(None, (noise_line(doc), prediction_line(doc)))),
        best=best_line(doc),
        diff_check=doc.get("diff_check") or "",
        diff=doc["diff"],
        snippets=doc["snippets"],
    )
