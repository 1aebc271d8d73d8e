"""The registry of names (diagnose/_registry.py), the rules, the docs and the JSON schema agree; rules whose
data a trace lacks are reported as not checked, on recorded traces."""

import re
import shutil

import pytest

from idlehound.analysis import FIXES, IDLE_CAUSES, IdleCause
from idlehound.diagnose import RULES, Cause, Kind, Severity
from idlehound.diagnose._registry import CAUSES, IDLE_CAUSE_INFO
from idlehound.pipeline import analyze_path
from idlehound.report.markdown import render_markdown

from .conftest import ROOT, TRACES, shared

METRICS_MD = (ROOT / "docs" / "metrics.md").read_text()
SCHEMA_MD = (ROOT / "docs" / "json-schema.md").read_text()


def _table_keys(doc: str, heading: str) -> set[str]:
    """The backquoted first cells of the first table under a heading."""
    body = doc.split(heading, 1)[1]
    rows = re.search(r"\n(\|.*\|\n)+", body).group(0)
    return {m for line in rows.splitlines() for m in re.findall(r"^\| `([a-z0-9_]+)` \|", line)}


def _schema_list(label: str) -> set[str]:
    """The backquoted values after `label:` in the cause list of docs/json-schema.md."""
    para = SCHEMA_MD.split("Finding causes (", 1)[1].split("\n\n", 1)[0]
    part = para.split(label, 1)[1].split(".", 1)[0]
    return set(re.findall(r"`([a-z0-9_]+)`", part))


def test_every_cause_is_documented_in_metrics_md_and_nothing_else_is():
    assert _table_keys(METRICS_MD, "## Findings") == {c.value for c in Cause}


def test_every_cause_severity_and_kind_is_in_the_schema_and_nothing_else_is():
    assert _schema_list("`not_checked[].causes`; the vocabulary in `idlehound/vocabulary.py`):") == {
        c.value for c in Cause
    }
    assert _schema_list("Severities:") == {s.value for s in Severity}
    assert _schema_list("Kinds:") == {k.value for k in Kind}


def test_idle_causes_agree_with_docs_and_schema():
    assert _table_keys(METRICS_MD, "## GPU idle by cause") == set(IDLE_CAUSES) == {c.value for c in IdleCause}
    row = next(line for line in SCHEMA_MD.splitlines() if line.startswith("| `idle_by_cause_ms`"))
    assert set(re.findall(r"`([a-z_]+)`", row.split("|")[3])) == set(IDLE_CAUSES)
    flat = " ".join(METRICS_MD.split())
    for info in IDLE_CAUSE_INFO.values():
        assert f"| `{info.cause.value}` | {' '.join(info.definition.split())} |" in flat


def test_registry_has_an_entry_for_every_cause_and_every_rule_reports_registered_causes():
    assert set(CAUSES) == set(Cause)
    for cause, info in CAUSES.items():
        assert info.cause is cause and info.title and info.fix and info.doc.startswith("docs/")
    reported = [c for r in RULES.values() for c in r.causes]
    assert sorted(reported) == sorted(Cause), "each cause has exactly one rule"
    assert set(FIXES) <= {c.value for c in Cause}, "the replay fixes only registered causes"
    assert all(r.match is not None or r.refine is not None for r in RULES.values())
    assert all(name == r.name == r.causes[0] for name, r in RULES.items())


def test_findings_use_registry_values(tmp_path):
    doc = analyze_path(TRACES / "sync_item").doc
    assert doc["findings"]
    for f in doc["findings"]:
        assert Cause(f["cause"]) and Severity(f["severity"]) and Kind(f["kind"])
        assert type(f["cause"]) is str  # plain strings in the document, not enum members


def test_cpu_only_trace_without_run_json_lists_the_rules_it_could_not_check():
    doc = analyze_path(
        TRACES / "torch231_cpu"
    ).doc  # bare CPU trace: no GPU events, stacks, memory or run.json
    unchecked = {n["rule"]: n["missing"] for n in doc["not_checked"]}
    gpu_rules = {"sync", "pageable_copy", "launch_bound", "host_bound", "fp32_math", "memory_churn"}
    assert {r for r, m in unchecked.items() if m == ["gpu_events"]} == gpu_rules
    assert unchecked["cudnn_benchmark"] == ["gpu_events", "run_json"]
    assert unchecked["near_oom"] == ["memory_events"]
    assert unchecked["framework_sync"] == ["python_stacks"]
    assert "data_loading" not in unchecked  # it reads the host's DataLoader time without a GPU
    assert [f["cause"] for f in doc["findings"]] == ["data_loading"]
    md = render_markdown(doc)
    assert "**Not checked**" in md and "needs GPU events" in md


def test_cpu_trace_with_stacks_checks_the_framework_rule():
    doc = analyze_path(shared("cpu_torch213_stack_shapes_memory.pt.trace.json.gz")).doc
    assert "framework_sync" not in {n["rule"] for n in doc["not_checked"]}
    assert "sync" in {n["rule"] for n in doc["not_checked"]}


def test_gpu_trace_without_run_json_does_not_check_cudnn_benchmark(tmp_path):
    for p in (TRACES / "cudnn_off").glob("*.gz"):  # the trace and sidecar, not run.json
        shutil.copy(p, tmp_path / p.name)
    with_run = analyze_path(TRACES / "cudnn_off").doc
    without = analyze_path(tmp_path).doc
    assert [f["cause"] for f in with_run["findings"]][:1] == ["cudnn_benchmark"]
    assert "cudnn_benchmark" not in {f["cause"] for f in without["findings"]}
    assert [(n["rule"], n["missing"]) for n in without["not_checked"]] == [
        ("cudnn_benchmark", ["run_json"]),
        ("near_oom", ["memory_events"]),
    ]


@pytest.mark.parametrize("name", ["memory_churn", "near_oom"])
def test_full_recorded_run_folder_checks_every_rule(name):
    res = analyze_path(TRACES / name)
    assert res.doc["not_checked"] == [] and res.diagnosis.not_checked == ()
    assert res.findings


def test_no_findings_is_told_apart_from_not_checked():
    healthy = analyze_path(TRACES / "healthy").doc  # a GPU run folder recorded without memory events
    assert healthy["findings"] == []
    assert [n["rule"] for n in healthy["not_checked"]] == ["near_oom"]
    cpu = analyze_path(TRACES / "torch231_cpu").doc
    assert len(cpu["not_checked"]) > len(healthy["not_checked"])


def test_renderers_know_every_idle_cause_severity_and_tune_cause():
    from idlehound.report import terminal
    from idlehound.report.html import COLORS
    from idlehound.tune._candidates import all_candidates

    assert set(IDLE_CAUSES) <= set(COLORS)
    assert set(terminal._SEV) == {s.value for s in Severity}
    tune_causes = {c for cand in all_candidates(16, cuda=True) for c in cand.causes}
    assert tune_causes <= {c.value for c in Cause}


def test_html_and_terminal_show_not_checked_only_when_rules_were_skipped():
    import io

    from rich.console import Console

    from idlehound.report.html import render_html
    from idlehound.report.terminal import render

    cpu = analyze_path(TRACES / "torch231_cpu").doc
    full = analyze_path(TRACES / "near_oom").doc
    assert "id='not-checked'" in render_html(
        cpu
    ) and "<code>near_oom</code>: needs memory events" in render_html(cpu)
    assert "id='not-checked'" not in render_html(full)
    out = io.StringIO()
    render(cpu, Console(file=out, width=200))
    assert (
        "not checked: sync, pageable_copy, launch_bound, host_bound, fp32_math, memory_churn (needs GPU events"
        in out.getvalue()
    )


def test_compare_does_not_call_a_finding_gone_where_the_other_side_could_not_check_it(tmp_path):
    from idlehound.compare import compare_docs
    from idlehound.report import render_compare_markdown

    for p in (TRACES / "cudnn_off").glob("*.gz"):
        shutil.copy(p, tmp_path / p.name)
    c = compare_docs(analyze_path(TRACES / "cudnn_off").doc, analyze_path(tmp_path).doc)
    assert "cudnn_benchmark" not in {f["cause"] for f in c["findings_gone"]}
    (u,) = c["findings_unchecked"]
    assert (u["cause"], u["in"], u["not_checked_in"]) == ("cudnn_benchmark", "A", "B")
    assert "- not checked in B: cudnn.benchmark is off" in render_compare_markdown(c)
