"""Tune results (schema idlehound/tune) as a terminal table, markdown and HTML."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from . import model as m
from ._escape import md_code, md_fence, md_text
from ._format import num as _n
from .model import typed

if TYPE_CHECKING:  # rich loads on first render only
    from rich.console import Console

Doc = Union[m.Tune, Mapping[str, Any]]
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


def columns(doc: m.Tune) -> tuple[str, ...]:
    version = doc.schema_version
    return _COLS3 if version >= 3 else _COLS2 if version >= 2 else _COLS


def _ci(ci: Optional[Sequence[float]]) -> str:
    if not ci:
        return "—"
    return f"{ci[0]:.2f}–{ci[1]:.2f}×" if ci[1] < 100 else "too wide"


_STATUS = {
    "rejected": "rejected",
    "failed": "failed",
    "skipped": "skipped",
    "not applicable": "not applicable",
}


Variant = Union[m.Variant, Mapping[str, Any]]


def verdict(variant: Variant, version: int = 2) -> str:
    """What the table says of a variant; "accepted" only for a change measurably faster with the math kept.
    version: the document's schema_version (an effect over a 95% interval from version 2 on)."""
    v = typed(variant, m.Variant)
    if v.candidate == "baseline":
        return "baseline"
    text = _STATUS.get(v.status, "accepted")
    if v.status == "ok" and version >= 2:
        text = _effect(v)
    cut = v.warmup_note or ""  # a warm-up cut to fit a short script qualifies the figure; a raise does not
    reason = _diverged_words(v.reason) if v.status == "rejected" and v.reason else v.reason
    return (
        text
        + (f": {reason}" if reason else "")
        + (f" ({cut})" if cut.startswith("warm-up ") and ", not " in cut else "")
    )


def _effect(v: m.Variant) -> str:
    interval = (v.gain_ci if v.on_top_of else v.speedup_ci) or []
    if v.effect == "faster" and (v.speedup_ci or [0])[0] > 1.0:
        return "accepted"
    if v.effect == "slower":
        return "slower: not kept"
    if interval and interval[0] > 1.0:  # faster, but not by the margin the interval must clear
        return f"not proven faster: interval {_ci(interval)}"
    return "no measurable effect"


_DIVERGED = re.compile(r"^(?P<check>.+?): diverged at step (?P<step>\d+): (?P<was>\S+) vs (?P<got>\S+)$")


def _diverged_words(reason: str) -> str:
    """ "bitwise equal: diverged at step 111: 2.3 vs 2.4" as a sentence: what changed, then the check it failed."""
    found = _DIVERGED.match(reason)
    if not found:
        return reason
    return (
        f"the losses changed at step {found['step']} ({found['was']} as written, {found['got']} with the change; "
        f"check: {found['check']})"
    )


def _pct(x: float) -> str:
    return f"{100 * (x - 1):+.0f}%"


def versus(variant: Variant) -> str:
    """The replay's predicted gain beside the measured one, over the same reference (the stack below, if any)."""
    v = typed(variant, m.Variant)
    if v.candidate == "baseline":
        return "—"
    got, ci = (v.gain, v.gain_ci) if v.on_top_of else (v.speedup, v.speedup_ci)
    pred = f"predicted {_pct(v.predicted)}" if v.predicted is not None else "no prediction"
    if got is None:
        return pred + (" / not measured" if v.predicted is not None else "")
    interval = f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci and ci[1] < 100 else ""
    return f"{pred} / measured {_pct(got)}{interval}"


def _cell(v: m.Variant, col: str, version: int) -> str:
    on_top = f" (+ {v.on_top_of})" if v.on_top_of else ""
    return {
        "candidate": v.label + on_top,
        "change": v.candidate + (f" on {v.on_top_of}" if v.on_top_of else ""),
        "samples/s": _n(v.samples_per_s, 0),
        "steps/s": _n(v.steps_per_s, 2),
        "speed-up": _n(v.speedup, 2, "×"),
        "95% interval": _ci(v.speedup_ci),
        "gain on top": _n(v.gain, 2, "×") + (f" ({_ci(v.gain_ci)})" if v.gain_ci else ""),
        "GPU busy": _n(v.gpu_util, 0, "%"),
        "95% CI": _ci(v.speedup_ci),
        "gain": _n(v.gain, 2, "×"),
        "GPU": _n(v.gpu_util, 0, "%"),
        "runs": str(v.rounds or "—"),
        "loss check": v.loss_check,
        "verdict": verdict(v, version),
        "predicted / measured": versus(v),
    }[col]


def rows(doc: Doc, cols: tuple[str, ...] = ()) -> list[list[str]]:
    t = typed(doc, m.Tune)
    return [[_cell(v, c, t.schema_version) for c in cols or columns(t)] for v in t.variants]


def legend(doc: Doc) -> list[tuple[str, str]]:
    """Each short name of the terminal table with what it changes (and how its warm-up was set, if not --skip)."""
    t = typed(doc, m.Tune)
    out: dict[str, str] = {}
    for v in t.variants[1:]:
        note = v.warmup_note or ""
        seen = (
            f"; {versus(v)}"
            if t.schema_version >= 3 and (v.status in ("ok", "rejected") or v.predicted is not None)
            else ""
        )
        out.setdefault(v.candidate, v.label + seen + (f"; {note}" if note else ""))
    return list(out.items())


def noise_line(doc: m.Tune) -> str:
    n = doc.noise
    if n.time_pct is None:
        return "Run-to-run noise: not measured (the repeat of the baseline did not complete)."
    line = (
        f"Run-to-run noise (the unmodified script twice): step time {n.time_pct:.1f}%, "
        f"largest per-step loss difference {n.loss_rel_diff:.2g} (relative)."
    )
    drift = doc.drift_pct
    if drift is not None:
        how = f"{abs(drift):.1f}% {'slower' if drift > 0 else 'faster'} than" if drift else "as fast as"
        line += (
            f" Drift: the baseline's last run was {how} its first; each run is compared with the reference "
            f"runs around it, so the drift does not count as a speed-up."
        )
    return line


def prediction_line(doc: m.Tune) -> str:
    """How the candidates were ordered (version 3); "" for older documents."""
    if doc.schema_version < 3:
        return ""
    p = doc.prediction
    line = (
        f"Order: largest predicted gain first, from the replay of the baseline's profile (step "
        f"{p['step_ms']:.2f} ms); candidates without a prediction after."
        if p.get("available")
        else "Order: as listed (no replay of a GPU profile to predict gains from)."
    )
    if doc.budget_s is not None:
        line += f" Budget {doc.budget_s:g} s"
        line += _used(doc.budget_s, doc.wall_s)
    return line


def _used(budget: float, wall: Optional[float]) -> str:
    if wall is None:
        return "."
    if wall <= budget:
        return f", used {wall:.0f} s."
    return (
        f", used {wall:.0f} s ({100 * (wall / budget - 1):.0f}% over: a run under way is finished, not cut)."
    )


# The names `--try` takes, for the line of a tune that found nothing to try. tune/ knows its candidates and
# registers how to list them when it is imported (report/ sits below tune/ and does not import it).
_candidate_names: Callable[[], list[str]] = list


def set_candidate_names(names: Callable[[], list[str]]) -> None:
    global _candidate_names
    _candidate_names = names


def best_line(doc: m.Tune) -> str:
    best = doc.best
    if best:
        ci = f" (95% interval {_ci(best.speedup_ci)})" if best.speedup_ci else ""
        return (
            f"Best safe change: {best.label} — {best.speedup:.2f}× faster{ci}, loss check {best.loss_check}"
        )
    if len(doc.variants) == 1:
        causes = ", ".join(doc.diagnosed_causes) or "none"
        return (
            f"Nothing to try: no candidate addresses what the diagnosis found (causes: {causes}). "
            f"`--try NAME` tries one anyway: {', '.join(_candidate_names())}."
        )
    if doc.schema_version >= 2:
        margin = 0.03 if doc.margin is None else doc.margin
        return (
            f"No change was measurably faster with the losses kept (a 95% interval above "
            f"{1 + margin:.2f}×): keep the script as it is."
        )
    return "No candidate was both faster and safe."


def render_tune(doc: Doc, console: Optional[Console] = None) -> None:
    from rich.console import Console
    from rich.syntax import Syntax

    from ._escape import inert

    c = console or Console()
    # script names, errors and code from the run: shown as text, control characters made visible
    t: m.Tune = inert(typed(doc, m.Tune))
    c.print(
        f"idlehound tune: {t.script} ({t.skip} warm-up + {t.steps} timed steps each)",
        markup=False,
        highlight=False,
    )
    c.print(_terminal_table(t))
    for name, label in legend(t):
        c.print(f"  {name}: {label}", markup=False, highlight=False)
    c.print(noise_line(t), markup=False, highlight=False)
    if prediction_line(t):
        c.print(prediction_line(t), markup=False, highlight=False)
    c.print(best_line(t), markup=False)
    if t.diff_check:
        c.print(f"Diff check: {t.diff_check}", markup=False, highlight=False)
    for line in t.diff.splitlines():  # unwrapped and uncropped, so it can be copied
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else None
        c.print(line, style=style, markup=False, highlight=False, soft_wrap=True)
    for s in t.snippets:
        c.print(Syntax(s, "python", theme="ansi_dark", background_color="default", word_wrap=True))


def _terminal_table(doc: m.Tune) -> Any:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    for col in _TERMINAL:  # the numbers never wrap; words of the headers are never cropped
        t.add_column(
            col,
            justify="right" if col in _NUMERIC else "left",
            no_wrap=col in _NUMERIC,
            min_width=None if col in _NUMERIC else 12,
            ratio=1 if col in ("change", "verdict") else None,
            overflow="fold",
        )
    for r in rows(doc, _TERMINAL):
        t.add_row(*(Text(x) for x in r))
    return t


def tune_markdown(doc: Doc) -> str:
    t = typed(doc, m.Tune)
    out = [
        f"# idlehound tune: {md_code(t.script)}",
        "",
        f"Diagnosed causes: {', '.join(t.diagnosed_causes) or 'none'}",
        "",
        "| " + " | ".join(columns(t)) + " |",
        "|" + "|".join("---:" if c in _NUMERIC else "---" for c in columns(t)) + "|",
    ]
    out += ["| " + " | ".join(map(md_text, r)) + " |" for r in rows(t)]
    notes = [f"- {md_text(v.candidate)}: {md_text(v.warmup_note)}" for v in t.variants if v.warmup_note]
    out += ["", "Warm-up:", *notes] if notes else []
    out += ["", noise_line(t)]
    out += ["", prediction_line(t)] if prediction_line(t) else []
    out += ["", best_line(t)]
    if t.diff_check:
        out += ["", f"Diff check: {md_text(t.diff_check)}"]
    if t.diff:
        out += ["", *md_fence(t.diff.rstrip(), "diff")]
    for s in t.snippets:
        out += ["", *md_fence(s, "python")]
    return "\n".join(out) + "\n"


def tune_html(doc: Doc) -> str:
    from .html import render_page

    t = typed(doc, m.Tune)
    return render_page(
        "tune.html",
        script=t.script,
        head=columns(t),
        rows=rows(t),
        noise=" ".join(filter(None, (noise_line(t), prediction_line(t)))),
        best=best_line(t),
        diff_check=t.diff_check or "",
        diff=t.diff,
        snippets=t.snippets,
    )
