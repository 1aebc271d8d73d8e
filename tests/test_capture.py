"""`idlehound run` on real tiny scripts, on the CPU: traces, run.json, sidecar lines, exit codes, signals."""

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import SCRIPTS, needs


@pytest.fixture
def run_cli(forked_cli):
    """Each `idlehound ...` run as a fork of one torch-loaded interpreter (tests/_forkserver.py)."""
    return forked_cli


pytestmark = [pytest.mark.slow, needs("torch")]  # each test runs a script under `idlehound run`

CPU = SCRIPTS / "cpu"
WINDOW = ["--skip", "3", "--warmup", "1", "--active", "3"]


def only_run(logdir: Path) -> Path:
    runs = [p for p in logdir.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def traces(run: Path):
    return sorted(run.glob("*.pt.trace.json.gz"))


def test_run_with_optimizer_writes_trace_run_json_and_exact_line(tmp_path, run_cli):
    import torch

    r = run_cli("run", "--logdir", tmp_path, *WINDOW, CPU / "train_item.py", "20")
    assert r.returncode == 0, r.stderr
    assert "ARGV ['20']" in r.stdout  # the script saw its own argv
    run = only_run(tmp_path)
    (trace,) = traces(run)
    info = json.loads((run / "run.json").read_text())
    assert info["exit_code"] == 0 and info["steps_seen"] == 20
    assert info["command"][-1] == "20" and info["environment"]["torch"] == torch.__version__
    assert info["schedule"] == {
        "skip": 3,
        "warmup": 1,
        "active": 3,
        "step_on": "optimizer",
        "stop_after": False,
    }
    doc = json.loads(gzip.decompress(trace.read_bytes()))
    steps = [e["name"] for e in doc["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")]
    assert steps == ["ProfilerStep#4", "ProfilerStep#5", "ProfilerStep#6"]
    side = json.loads(gzip.decompress(next(run.glob("*.sidecar.json.gz")).read_bytes()))
    item_calls = [f for f in side["frames"] if "method item" in f[1]]
    assert item_calls and {f[3] for f in item_calls} == {17}  # the exact line of loss.item()
    for name in ("report.json", "report.md", "report.html", "samples.json"):
        assert (run / name).exists()
    report = json.loads((run / "report.json").read_text())
    assert report["trace"]["steps"] == [4, 5, 6]


def test_stop_after_ends_the_script_cleanly(tmp_path, run_cli):
    r = run_cli("run", "--logdir", tmp_path, *WINDOW, "--stop-after", CPU / "train_item.py", "1000")
    assert r.returncode == 0
    info = json.loads((only_run(tmp_path) / "run.json").read_text())
    assert info["steps_seen"] == 7 and "ARGV" not in r.stdout


def test_no_optimizer_steps_on_dataloader(tmp_path, run_cli):
    r = run_cli("run", "--logdir", tmp_path, *WINDOW, "--step-on", "dataloader", CPU / "no_optimizer.py")
    assert r.returncode == 0, r.stderr
    run = only_run(tmp_path)
    assert len(traces(run)) == 1
    info = json.loads((run / "run.json").read_text())
    assert info["dataloader"]["batch_size"] == 8 and info["dataloader"]["num_workers"] == 0


def test_no_optimizer_without_step_on_says_why_nothing_was_captured(tmp_path, run_cli):
    r = run_cli("run", "--logdir", tmp_path, *WINDOW, CPU / "no_optimizer.py")
    assert r.returncode == 0
    assert "no trace was captured" in r.stderr and "--step-on" in r.stderr


def test_script_that_raises_keeps_partial_trace_and_exit_code(tmp_path, run_cli):
    r = run_cli(
        "run", "--logdir", tmp_path, "--skip", "5", "--warmup", "1", "--active", "20", CPU / "raises.py"
    )
    assert r.returncode == 1
    assert "planted failure" in r.stderr  # the user's traceback is shown
    run = only_run(tmp_path)
    assert len(traces(run)) == 1  # the window never completed, but what was recorded is saved
    info = json.loads((run / "run.json").read_text())
    assert info["exit_code"] == 1 and "planted failure" in info["error"]


def test_sys_exit_code_is_kept(tmp_path, run_cli):
    r = run_cli("run", "--logdir", tmp_path, *WINDOW, CPU / "exits3.py")
    assert r.returncode == 3
    run = only_run(tmp_path)
    assert json.loads((run / "run.json").read_text())["exit_code"] == 3
    assert len(traces(run)) == 1


def test_module_mode(tmp_path, run_cli):
    r = run_cli("run", "--logdir", tmp_path, *WINDOW, "-m", "pkg.trainmod", "12", cwd=CPU)
    assert r.returncode == 0, r.stderr
    assert "MODULE __main__ ['12']" in r.stdout
    assert len(traces(only_run(tmp_path))) == 1


def test_ctrl_c_flushes_the_window_and_exits_130(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "idlehound",
        "run",
        "--logdir",
        str(tmp_path),
        "--skip",
        "3",
        "--warmup",
        "1",
        "--active",
        "100000",
        str(CPU / "forever.py"),
        "8",
    ]
    p = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    deadline = time.time() + 120
    for line in p.stdout:
        if "READY" in line or time.time() > deadline:
            break
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    run = only_run(tmp_path)
    assert len(traces(run)) == 1
    assert json.loads((run / "run.json").read_text())["exit_code"] == 130


def test_earlier_runs_are_never_overwritten(tmp_path, run_cli):
    for _ in range(2):
        assert (
            run_cli(
                "run",
                "--logdir",
                tmp_path,
                "--name",
                "same",
                *WINDOW,
                "--no-report",
                CPU / "train_item.py",
                "10",
            ).returncode
            == 0
        )
    runs = sorted(p.name for p in tmp_path.iterdir())
    assert len(runs) == 2 and len(set(runs)) == 2
    for r in runs:
        assert len(traces(tmp_path / r)) == 1


def test_python_api_profile_auto_and_manual_steps(tmp_path):
    import torch

    import idlehound

    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with idlehound.profile(
        logdir=tmp_path, run_name="auto", skip=2, warmup=1, active=2, print_report=False, progress=False
    ) as p:
        for _ in range(8):
            loss = model(torch.randn(4, 8)).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert p.result is not None and [s.number for s in p.result.analysis.steps] == [3, 4]
    with idlehound.profile(
        logdir=tmp_path, run_name="manual", skip=1, warmup=1, active=3, print_report=False, progress=False
    ) as q:
        for _ in range(8):
            model(torch.randn(4, 8)).sum().backward()
            q.step()
    assert [s.number for s in q.result.analysis.steps] == [2, 3, 4]
    assert q.run_dir != p.run_dir


def test_steps_after_the_window_are_timed_up_to_a_bound(tmp_path):
    """A job of days must not grow run.json (read within 64 MiB) or memory with every step."""
    import torch

    import idlehound
    from idlehound.capture._session import MAX_TIMED_AFTER_WINDOW

    model = torch.nn.Linear(8, 1)
    with idlehound.profile(
        logdir=tmp_path, run_name="long", skip=1, warmup=1, active=2, print_report=False, progress=False
    ) as p:
        for _ in range(MAX_TIMED_AFTER_WINDOW + 300):
            model(torch.randn(4, 8)).sum().backward()
            p.step()
    info = json.loads((p.run_dir / "run.json").read_text())
    assert info["steps_seen"] == MAX_TIMED_AFTER_WINDOW + 300
    assert MAX_TIMED_AFTER_WINDOW - 10 <= len(info["step_ms_after_window"]) < MAX_TIMED_AFTER_WINDOW
    assert info["window"]["steps_recorded"] == 2
