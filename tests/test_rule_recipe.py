"""CONTRIBUTING's recipe for a diagnosis rule, followed literally with a small rule: step 1's module is written
here, step 2's line in RULES is a monkeypatch, and this file is step 3. Nothing else is edited, and the rule runs
on a recorded trace through the whole pipeline into every rendering."""

from __future__ import annotations

import json

from idlehound.analysis import Analysis
from idlehound.diagnose import CAUSES, RULES, Cause, Finding, Rule, Thresholds
from idlehound.diagnose._finding import ms
from idlehound.diagnose._rule import GPU_EVENTS, PYTHON_STACKS
from idlehound.pipeline import analyze_path
from idlehound.report import render_markdown, to_json

from .conftest import TRACES

TRACE = TRACES / "sync_item"  # planted: print(f"... {loss}") at line 17 syncs every step


# ---- step 1: the rule (in the recipe: src/idlehound/diagnose/worst_sync_line.py)
def check(a: Analysis, t: Thresholds) -> list[Finding]:
    """The one source line with the most GPU idle after blocking host reads, when it holds most of it."""
    lines = [ln for ln in a.idle_lines if ln.cause == "sync" and ln.location is not None]
    if not lines:
        return []
    worst = max(lines, key=lambda ln: ln.idle_ns)
    share = worst.idle_ns / max(a.idle_ns.get("sync", 0), 1)
    if share < 0.5:
        return []
    idle = ms(a, worst.idle_ns)
    return [
        Finding(
            Cause.SYNC,
            "One line makes most of the syncs",
            idle,
            a.step_ms,
            [f"{worst.location}: {idle:.2f} ms of GPU idle per step, {100 * share:.0f}% of the sync idle"],
            CAUSES[Cause.SYNC].fix,
            location=worst.location,
            details={"share_of_sync_idle": share},
        )
    ]


RULE = Rule(
    "worst_sync_line",
    "one source line holds most of the GPU idle after blocking host reads",
    (Cause.SYNC,),
    needs=(GPU_EVENTS, PYTHON_STACKS),
    match=check,
)


# ---- step 3: its test
def _ours(doc: dict) -> list[dict]:
    return [f for f in doc["findings"] if f["title"] == "One line makes most of the syncs"]


def test_a_rule_added_as_the_recipe_says_runs_and_reaches_the_report(monkeypatch):
    assert _ours(analyze_path(TRACE).doc) == []  # not there before step 2
    monkeypatch.setitem(RULES, RULE.name, RULE)  # step 2: its line in RULES (diagnose/__init__.py)
    res = analyze_path(TRACE)
    [mine] = _ours(res.doc)
    assert (mine["location"]["file"], mine["location"]["line"]) == ("tests/scripts/planted/sync_item.py", 17)
    assert mine["cause"] == "sync" and mine["kind"] == "idle" and mine["severity"]
    assert mine["details"]["share_of_sync_idle"] > 0.5 and mine["evidence"][0].startswith(
        "tests/scripts/planted"
    )
    assert "replay" in mine["details"]  # the replay predicted its gain from the sync cause's fix
    assert "One line makes most of the syncs" in render_markdown(res.doc)
    assert _ours(json.loads(to_json(res.doc))) == [mine]


def test_the_new_rule_is_listed_as_not_checked_where_its_data_is_missing(monkeypatch):
    monkeypatch.setitem(RULES, RULE.name, RULE)
    trace = next((TRACES / "torch231_cpu").glob("*.pt.trace.json*"))  # a CPU run: no GPU events
    doc = analyze_path(trace).doc
    assert _ours(doc) == []
    [entry] = [nc for nc in doc["not_checked"] if nc["rule"] == "worst_sync_line"]
    assert entry["causes"] == ["sync"] and "gpu_events" in entry["missing"]
