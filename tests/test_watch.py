"""Long runs on the CPU: `idlehound run --watch` opens later windows on a slowdown or when `idlehound capture` asks
from another process, under torchrun too and from the framework callbacks; faults leave one line and a note."""

import gzip
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from idlehound.app import capture_window
from idlehound.errors import IdlehoundError

from .conftest import SCRIPTS, needs

pytestmark = [pytest.mark.slow, needs("torch")]  # each test runs scripts under `idlehound run`


WATCH = SCRIPTS / "watch"
SLOW = WATCH / "slow_loader.py"
UNTIL_TOLD = WATCH / "until_told.py"  # trains until the file named by its argument exists
LOADER_LINE = 28  # `for step, (x, y) in enumerate(loader):` in slow_loader.py
K = 20  # WatchOptions.k, the rolling median's steps


def the_run(logdir: Path) -> Path:
    runs = [p for p in logdir.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def windows(run: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(run.glob("windows/step*/window.json"))]


def profiler_steps(trace: Path) -> list[int]:
    doc = json.loads(gzip.decompress(trace.read_bytes()))
    names = [e["name"] for e in doc["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")]
    return sorted({int(n.split("#")[1]) for n in names})


def start(logdir: Path, *args, env=None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "idlehound", "run", "--logdir", str(logdir), *map(str, args)],
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(cond, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("timed out")


def test_a_loader_5x_slower_gets_a_window_within_2k_steps_naming_data_loading(tmp_path, forked_cli):
    run_cli = forked_cli  # no job runs beside it: a fork of the torch-loaded server (tests/_forkserver.py)
    env = {"SLOW_AFTER": "150", "STEPS": "240", "EXIT_CODE": "3", "BASE_S": "0.01"}
    r = run_cli(
        "run", "--logdir", tmp_path, "--watch", "--capture-when", "slower=1.3", "--no-report", SLOW, env=env
    )
    assert r.returncode == 3, r.stderr  # the script's own exit code
    assert "trained" in r.stderr
    run = the_run(tmp_path)
    (w,) = windows(run)
    assert w["status"] == "saved" and w["reason"].startswith("slower")
    assert 150 < w["start_step"] <= 150 + 2 * K
    (trace,) = run.glob(f"windows/step{w['start_step']}/*.pt.trace.json.gz")
    assert profiler_steps(trace) == list(range(w["start_step"], w["start_step"] + 5))
    assert len(list(run.glob("*.pt.trace.json.gz"))) == 1  # the first window stays where analyze finds it
    rep = run_cli("report", run, "-o", tmp_path / "r.html")
    assert rep.returncode == 0, rep.stderr
    (line,) = [ln for ln in rep.stdout.splitlines() if ln.startswith("window at step")]
    assert "grew most: data loading" in line and f"slow_loader.py:{LOADER_LINE}" in line
    html = (tmp_path / "r.html").read_text()
    assert "id='step-curve'" in html and html.count("class='window'") == 2 and "data loading" in html
    header, *rows = (run / "steps.jsonl").read_text().splitlines()
    assert json.loads(header)["clock"] == "host" and sum(json.loads(x)[1] for x in rows) == 239


def test_capture_from_another_shell_and_its_refusals(tmp_path, run_cli):
    logdir, stop = tmp_path / "logs", tmp_path / "stop"  # the job trains until the test makes `stop`
    logdir.mkdir()
    job = start(logdir, "--watch", "--no-report", UNTIL_TOLD, stop)
    try:
        run = wait_for(lambda: next(iter(logdir.iterdir()), None))
        wait_for(
            lambda: (
                len((run / "steps.jsonl").read_text().splitlines()) > 30
                if (run / "steps.jsonl").exists()
                else False
            )
        )
        asked = subprocess.Popen(
            [sys.executable, "-m", "idlehound", "capture", str(run), "--steps", "3"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_for(lambda: (run / "control" / "request.json").exists())
        # asked again before that window is saved (3 s ahead, LEAD_S): in this process, with no interpreter to
        # start inside those seconds on a busy machine; the CLI's one line for a refusal is checked below
        with pytest.raises(IdlehoundError, match="asked for already|same moment"):
            capture_window(run, 3, 0)
        out, err = asked.communicate(timeout=120)
        assert asked.returncode == 0, err
        assert "saved in" in out
    finally:
        stop.touch()
        out, err = job.communicate(timeout=300)
    assert job.returncode == 0 and "trained" in err
    (w,) = windows(run)
    assert w["status"] == "saved" and w["reason"] == "idlehound capture"
    (trace,) = run.glob(f"windows/step{w['start_step']}/*.pt.trace.json.gz")
    assert profiler_steps(trace) == [w["start_step"], w["start_step"] + 1, w["start_step"] + 2]
    done = run_cli("capture", run)
    assert done.returncode == 2 and "has finished" in done.stderr


def test_without_watch_capture_is_refused(tmp_path, run_cli):
    logdir, stop = tmp_path / "logs", tmp_path / "stop"
    logdir.mkdir()
    job = start(logdir, "--no-report", UNTIL_TOLD, stop)
    try:
        run = wait_for(lambda: next(iter(logdir.iterdir()), None))
        wait_for(lambda: (run / "run.json").exists())
        r = run_cli("capture", run, "--wait", "0")
        assert r.returncode == 2 and "not started with --watch" in r.stderr
    finally:
        stop.touch()
        _, err = job.communicate(timeout=300)
    assert job.returncode == 0 and "trained" in err  # the refusal left the job alone


def test_a_job_killed_mid_window_leaves_a_noted_window(tmp_path, forked_cli):
    run_cli = forked_cli  # no job runs beside it: a fork of the torch-loaded server (tests/_forkserver.py)
    r = run_cli(
        "run",
        "--logdir",
        tmp_path,
        "--watch",
        "--capture-every",
        "60",
        "--no-report",
        SLOW,
        env={"STEPS": "200", "KILL_AT": "63"},
    )
    assert r.returncode == -9
    run = the_run(tmp_path)
    (w,) = windows(run)
    assert w["status"] == "recording" and w["start_step"] == 62
    capture = run_cli("capture", run, "--wait", "0")
    assert capture.returncode == 2 and "no longer running" in capture.stderr
    rep = run_cli("report", run, "-o", tmp_path / "r.md")
    assert rep.returncode == 0, rep.stderr
    assert "note: the window at step 62 was still recording when the job ended" in rep.stdout


def test_torchrun_two_ranks_record_the_same_steps(tmp_path):
    # 300 steps of 30 ms or more: the window lies 3 s (LEAD_S, ~100 steps) after the ask, at step ~120
    job = start(tmp_path, "--nproc", "2", "--watch", "--no-report", SCRIPTS / "dist" / "ddp_train.py", "300")
    try:
        run = wait_for(lambda: next(iter(tmp_path.iterdir()), None))
        wait_for(
            lambda: all(
                (run / f"steps.rank{r}.jsonl").exists()
                and len((run / f"steps.rank{r}.jsonl").read_text().splitlines()) > 20
                for r in (0, 1)
            )
        )
        # asked in this process (no interpreter to start while the job runs on); the CLI's: the test above
        assert "saved in" in capture_window(run, 3, 200.0)
    finally:
        out, err = job.communicate(timeout=400)
    assert job.returncode == 0, err
    (folder,) = run.glob("windows/step*")
    traces = sorted(folder.glob("*.pt.trace.json.gz"))
    assert [t.name[:5] for t in traces] == ["rank0", "rank1"]
    start_step = int(folder.name[4:])
    assert (
        profiler_steps(traces[0]) == profiler_steps(traces[1]) == [start_step, start_step + 1, start_step + 2]
    )


def test_torchrun_a_slowdown_on_one_rank_opens_the_same_window_on_both(tmp_path, forked_cli):
    run_cli = forked_cli  # no job runs beside it: a fork of the torch-loaded server (tests/_forkserver.py)
    # rank_slows.py: only rank 1 slows (5x after step 100); rank 0 waits for it once every 10 steps, so its
    # median step time stays steady and its own trigger never fires. Rank 1 asks for both.
    env = {"STEPS": "300", "SLOW_AFTER": "100", "SLOW_RANK": "1"}
    r = run_cli(
        "run", "--logdir", tmp_path, "--nproc", "2", "--watch", "--capture-when", "slower=1.3", "--no-report",
        WATCH / "rank_slows.py", env=env, timeout=400,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert "rank 1 saw the job slow down" in r.stderr and "rank 0 saw" not in r.stderr
    run = the_run(tmp_path)
    (folder,) = run.glob("windows/step*")
    start_step = int(folder.name[4:])
    assert start_step > 100
    for rank in (0, 1):
        w = json.loads((folder / f"window.rank{rank}.json").read_text())
        assert w["rank"] == rank and w["status"] == "saved" and w["start_step"] == start_step
        assert w["reason"].startswith("slower") and w["request"]
        (trace,) = folder.glob(f"rank{rank}_*.pt.trace.json.gz")
        assert profiler_steps(trace) == list(range(start_step, start_step + 5))
        rep = json.loads((folder / f"report.rank{rank}.json").read_text())  # each rank analysed its own
        assert rep["trace"]["worker"].startswith(f"rank{rank}_")
    assert not (run / "control" / "request.json").exists()  # retired: the next window can be asked for
    out = run_cli("report", run, "--worker", trace.name.split(".")[0], "-o", tmp_path / "r.md")
    assert out.returncode == 0, out.stderr
    (vs,) = [ln for ln in out.stdout.splitlines() if ln.startswith(f"window at step {start_step:,} vs")]
    (by_rank,) = [ln for ln in out.stdout.splitlines() if "step time by rank" in ln]
    assert "(rank 1)" in vs
    ms = [float(x) for x in re.findall(r"rank \d ([\d.]+) ms", by_rank)]
    assert len(ms) == 2 and ms[1] > 3 * ms[0]  # rank 1's steps were 5x slower in the window


def test_torchrun_capture_every_opens_at_the_same_step_on_ranks_at_different_paces(tmp_path, forked_cli):
    run_cli = forked_cli  # no job runs beside it: a fork of the torch-loaded server (tests/_forkserver.py)
    # rank 1 is 5x slower throughout; rank 0 runs up to 10 steps ahead between meetings
    env = {"STEPS": "240", "SLOW_AFTER": "0", "SLOW_RANK": "1"}
    r = run_cli(
        "run", "--logdir", tmp_path, "--nproc", "2", "--watch", "--capture-every", "100", "--no-report",
        WATCH / "rank_slows.py", env=env, timeout=400,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    run = the_run(tmp_path)
    (folder,) = run.glob("windows/step*")
    assert folder.name == "step102"  # step 100 ended: one profiler warm-up step, then the window
    for rank in (0, 1):
        w = json.loads((folder / f"window.rank{rank}.json").read_text())
        assert w["status"] == "saved" and w["reason"] == "every 100 steps"
        (trace,) = folder.glob(f"rank{rank}_*.pt.trace.json.gz")
        assert profiler_steps(trace) == list(range(102, 107))


@pytest.mark.parametrize("script", ["lightning_watch.py", "hf_watch.py"])
def test_callbacks_open_later_windows(tmp_path, script):
    pytest.importorskip("lightning" if script.startswith("lightning") else "transformers")
    r = subprocess.run(
        [sys.executable, str(WATCH / script), str(tmp_path)], capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stderr[-2000:]
    run = Path(next(ln for ln in r.stdout.splitlines() if ln.startswith("RUN "))[4:])
    ws = windows(run)
    assert [w["start_step"] for w in ws][:2] == [42, 82] and all(w["status"] == "saved" for w in ws)
    assert (run / "steps.jsonl").is_file() and len(list(run.glob("*.pt.trace.json.gz"))) == 1
