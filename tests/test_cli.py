"""The CLI as a user runs it: exit codes, one-line errors, JSON output, gates, report files."""

import json

import pytest

from .conftest import TRACES, shared


@pytest.mark.slow
def test_analyze_prints_summary(run_cli):
    r = run_cli("analyze", TRACES / "dataloader_bound")
    assert r.returncode == 0, r.stderr
    assert "Data loading starves the GPU" in r.stdout
    assert "resnet.py:110" in r.stdout


@pytest.mark.slow
def test_analyze_json_is_versioned_and_complete(run_cli):
    r = run_cli("analyze", "--json", TRACES / "sync_item")
    doc = json.loads(r.stdout)
    assert doc["schema"] == "idlehound/analysis" and doc["schema_version"] == 2
    assert doc["findings"][0]["cause"] == "sync"
    for key in (
        "metrics",
        "breakdown_ms",
        "idle_by_cause_ms",
        "idle_by_line",
        "steps",
        "sync_points",
        "copies",
        "kernels",
        "memory",
        "dataloader",
        "timeline",
        "notes",
    ):
        assert key in doc


@pytest.mark.slow
def test_fail_under_gate(run_cli):
    bad = run_cli("analyze", "--fail-under", "gpu_util=70", TRACES / "dataloader_bound")
    assert bad.returncode == 1 and "gpu_util" in bad.stderr
    good = run_cli("analyze", "--fail-under", "gpu_util=70", TRACES / "healthy")
    assert good.returncode == 0


@pytest.mark.slow  # starts three `idlehound analyze` processes
def test_bad_gate_and_bad_input_are_one_line_exit_2(run_cli, tmp_path):
    r = run_cli("analyze", "--fail-under", "nonsense=3", TRACES / "healthy")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "unknown metric" in r.stderr
    junk = tmp_path / "junk.pt.trace.json"
    junk.write_text('{"traceEvents": [')
    r = run_cli("analyze", junk)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and str(junk) in r.stderr
    assert "Traceback" not in r.stderr
    r = run_cli("analyze", tmp_path / "missing")
    assert r.returncode == 2 and "no such file" in r.stderr


@pytest.mark.slow
def test_step_option(run_cli):
    r = run_cli("analyze", "--json", "--step", "3", shared("h200_torch211_sync.pt.trace.json.gz"))
    assert [s["number"] for s in json.loads(r.stdout)["steps"]] == [3]
    r = run_cli("analyze", "--step", "99", shared("h200_torch211_sync.pt.trace.json.gz"))
    assert r.returncode == 2 and "ProfilerStep#99" in r.stderr


@pytest.mark.slow
def test_report_files(run_cli, tmp_path):
    for ext in ("html", "md", "json"):
        out = tmp_path / f"r.{ext}"
        r = run_cli("report", TRACES / "pageable", "-o", out)
        assert r.returncode == 0, r.stderr
        assert out.stat().st_size > 500
    r = run_cli("report", TRACES / "pageable", "-o", tmp_path / "r.pdf")
    assert r.returncode == 2 and "unknown report format" in r.stderr
