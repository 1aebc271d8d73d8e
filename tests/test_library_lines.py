"""Exact library lines near idle time (issue 18): capture keeps the library frames' calling lines above each
point where the host waits, analysis names the innermost library line and the user line that reached it, and
"GPU idle by library line" groups idle by it. Also: one profiler per process (a callback under `idlehound run`).

Recordings: tests/traces/frameworks/ (tiny CPU runs with their sidecars; re-record with record.sh) and the H200
recordings of tests/traces/replay/ (a version-2 sidecar without library lines: def lines there).
"""

import gzip
import json
import os

import pytest

import idlehound
from idlehound.analysis import load_sidecar, roles
from idlehound.diagnose.frameworks import source_text
from idlehound.pipeline import analyze_path
from idlehound.report.html import render_html
from idlehound.report.markdown import render_markdown

from .conftest import ROOT, SCRIPTS, TRACES


@pytest.fixture
def run_cli(forked_cli):
    """Each `idlehound ...` run as a fork of one torch-loaded interpreter (tests/_forkserver.py)."""
    return forked_cli


FW = TRACES / "frameworks"


def sidecar(name: str) -> dict:
    return json.loads(gzip.decompress((FW / f"{name}.sidecar.json.gz").read_bytes()))


def framework_finding(name: str):
    a = idlehound.analyze(idlehound.load_trace(FW / f"{name}.pt.trace.json.gz"))
    (f,) = [f for f in idlehound.diagnose(a) if f.cause == "framework_sync"]
    return f


def test_sidecar_keeps_library_lines_only_near_idle_points():
    d = sidecar("hf_nan_filter_on")
    assert d["version"] == 3
    assert d["points"] and all(roles.is_idle_point(p[2]) for p in d["points"])
    assert d["library_calls"] and all(
        d["files"][r[2]] is False for r in d["library_calls"]
    )  # the user's: "frames"
    assert "transformers/trainer.py" in d["library_sources"]  # the library's text, read at capture time
    assert not any(f.startswith("torch/") for f in d["library_sources"])
    assert (FW / "hf_nan_filter_on.sidecar.json.gz").stat().st_size < 20_000


def test_trainer_nan_check_names_the_exact_library_line_and_its_text():
    f = framework_finding("hf_nan_filter_on")
    top = f.details["framework"][0]
    lib, user = top["library"], top["user"]
    assert (lib["file"], lib["function"], lib["exact"]) == ("transformers/trainer.py", "_run_epoch", True)
    assert (
        "torch.isnan(" in lib["source"] and "torch.isinf(" in lib["source"]
    )  # the check itself, not a def line
    first, lines = lib["snippet"]["first_line"], lib["snippet"]["lines"]
    assert lines[lib["line"] - first].strip() == lib["source"]
    assert (user["file"], user["exact"]) == ("hf_trainer.py", True)  # the user's line that reached it
    assert any(
        f"transformers/trainer.py:{lib['line']} `" in e and "reached from hf_trainer.py:" in e
        for e in f.evidence
    )


def test_lightning_step_log_names_the_library_lines():
    f = framework_finding("lightning_log_on_step")
    top = f.details["framework"][0]
    lib, blocking = top["library"], top["blocking"]
    assert lib["file"].endswith("logger_connector/logger_connector.py") and lib["exact"] and lib["source"]
    assert blocking is not None and blocking["exact"] and blocking["file"].startswith("lightning/")
    assert top["user"]["file"] == "lightning_fit.py"


def test_without_library_rows_the_def_line_stands():
    """A sidecar of version 2 (no library lines): the matched function's def line, marked as such."""
    a = idlehound.analyze(
        idlehound.load_trace(FW / "hf_eval_steps.pt.trace.json.gz")
    )  # recorded without sidecar
    (g,) = [g for g in idlehound.diagnose(a) if g.cause == "framework_sync"]
    lib = g.details["framework"][0]["library"]
    assert lib["exact"] is False and lib["source"] is None
    assert any("def line" in e for e in g.evidence)


def test_gpu_idle_by_library_line_on_a_recorded_h200_trainer_run():
    doc = analyze_path(TRACES / "replay" / "hf_gpt2").doc
    rows = doc["idle_by_library_line"]
    assert rows and rows[0]["location"]["file"] == "transformers/trainer.py"
    assert rows[0]["location"]["exact"] is False  # this run folder's sidecar (version 2) has no library lines
    user_ms = sum(r["idle_ms_per_step"] for r in doc["idle_by_line"])
    assert (
        0 < sum(r["idle_ms_per_step"] for r in rows) <= user_ms + 1e-3 * len(rows)
    )  # a regrouping (rows rounded)
    where = f"{rows[0]['location']['file']}:{rows[0]['location']['line']}"
    assert "GPU idle by library line" in render_markdown(doc) and where in render_markdown(doc)
    assert "GPU idle by library line" in render_html(doc) and where in render_html(doc)


def test_a_users_own_sync_has_no_library_line():
    doc = analyze_path(TRACES / "sync_item").doc
    assert doc["idle_by_line"] and not [r for r in doc["idle_by_library_line"] if r["cause"] == "sync"]


def test_old_sidecar_loads_without_library_data():
    (path,) = (TRACES / "replay" / "hf_gpt2").glob("*.sidecar.json.gz")
    d = load_sidecar(path)
    assert d["callers"] and d["points"] == [] and d["library_calls"] == {} and d["library_sources"] == {}


def test_source_text_is_the_locations_own_line():
    f = framework_finding("hf_nan_filter_on")
    loc = f.details["framework"][0]["library"]
    assert (
        source_text(
            idlehound.analysis.SourceLoc(
                loc["file"],
                loc["line"],
                loc["function"],
                True,
                (loc["snippet"]["first_line"], tuple(loc["snippet"]["lines"])),
            )
        )
        == loc["source"]
    )


# ---- one profiler per process


def _train(prof, steps: int) -> None:
    import torch

    model = torch.nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        model(torch.randn(4, 8)).pow(2).mean().backward()
        opt.step()
        prof.step()


@pytest.mark.slow  # in-process windows: imports torch and starts its profiler (seconds on the 2-core host)
def test_second_window_in_the_same_process_starts_no_profiler(tmp_path, capfd):
    from idlehound.integrations import profile_steps

    window = dict(skip=1, warmup=1, active=2, print_report=False, progress=False)
    with (
        profile_steps(logdir=tmp_path, run_name="outer", **window) as outer,
        profile_steps(logdir=tmp_path, run_name="inner", **window) as inner,
    ):
        _train(outer, 5)
        for _ in range(5):
            inner.step()
        assert inner.run_dir == outer.run_dir  # the one window there is
    err = capfd.readouterr().err
    (said,) = [ln for ln in err.splitlines() if "already profiles this process" in ln]  # one line, once
    assert str(outer.run_dir) in said and "no second profiler" in said
    assert [p.name.split("-")[0] for p in tmp_path.iterdir()] == ["outer"]
    assert inner.deferred_to and not inner.started and inner.result is None


@pytest.mark.slow  # seconds of subprocesses: CI runs it (-m "slow or not slow")
def test_callback_inside_idlehound_run_keeps_one_window(tmp_path, run_cli):
    pytest.importorskip("accelerate")
    r = run_cli(
        "run",
        "--logdir",
        tmp_path,
        "--skip",
        "3",
        "--warmup",
        "1",
        "--active",
        "2",
        "--no-report",
        SCRIPTS / "frameworks" / "accelerate_loop.py",
        "tensor",
        tmp_path / "acc",
        env={"ACTIVE": "2", "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")},
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stderr.count("already profiles this process") == 1
    runs = [p for p in tmp_path.iterdir() if p.is_dir() and (p / "run.json").exists()]
    assert [p.name.split("-")[0] for p in runs] == ["accelerate_loop"]
    assert len(list(runs[0].glob("*.pt.trace.json.gz"))) == 1


@pytest.mark.parametrize("run", ["lightning_prog_bar", "hf_trainer"])
def test_the_trainer_call_is_not_charged_as_a_sync(run):
    """`trainer.fit()` / `.train()` contains the framework's per-step reads but is the loop itself: the host time
    inside it is Python, launches and CPU ops, not sync time (which was 25 of 27 idle ms on the Lightning run)."""
    doc = analyze_path(TRACES / "frameworks_h200" / run).doc
    idle = doc["idle_by_cause_ms"]
    sync = next(f for f in doc["findings"] if f["cause"] == "sync")
    assert idle["sync"] < 0.05 * doc["metrics"]["step_ms"]["value"]
    assert idle["launch"] + idle["python"] > 5 * idle["sync"]
    assert idle["sync"] == pytest.approx(sync["details"]["sites"][0]["idle_ms_per_step"], abs=0.02)
