"""Fault matrix (issue 17): an exception at step N, sys.exit, os._exit, SIGINT and SIGTERM at random moments, and
windows past their time or memory budget. Every trial must end with the script's exit code (130 for SIGINT, 143
for SIGTERM), a flushed and analysed trace or a one-line statement why none, run.json complete, no orphans.

Run it alone with `pytest -m fault_matrix`; IDLEHOUND_FAULT_TRIALS (default 20 a kind) and IDLEHOUND_FAULT_SEED
change its size and its random moments.
"""

import json
import os
import random
import signal

import pytest

from ._zygote import FAULTS, Trial, Zygote, orphans
from .conftest import needs

pytestmark = [pytest.mark.fault_matrix, pytest.mark.slow, needs("torch")]
TRIALS = int(os.environ.get("IDLEHOUND_FAULT_TRIALS", "20"))
SEED = int(os.environ.get("IDLEHOUND_FAULT_SEED", "17"))
WINDOW = ["--skip", "3", "--warmup", "1", "--active", "3"]
# How a window may end, as run.json says it.
ENDINGS = {
    "not reached",
    "steps",
    "Ctrl-C",
    "SIGTERM",
    "time budget",
    "memory budget",
    "os._exit(9)",
    "the script's error (RuntimeError)",
    "the script's exit (code 7)",
}
NO_TRACE = ("no trace was captured", "nothing was captured", "idlehound: interrupted")


@pytest.fixture(scope="module")
def zygote(tmp_path_factory):
    z = Zygote(tmp_path_factory.mktemp("matrix"))
    yield z
    z.close()


def check(t: Trial, logdir, codes: set[int]) -> str:
    """The guarantees every trial keeps; returns how the trial ended, for the tally."""
    assert t.status in codes, (t.status, t.stderr[-2000:])
    assert not orphans(t), f"processes left behind: {orphans(t)}"
    runs = [p for p in logdir.iterdir() if p.is_dir()] if logdir.exists() else []
    if t.status < 0:  # ended by the signal itself, before idlehound's own code ran: nothing may exist
        assert not runs, runs
        return "killed before start"
    assert len(runs) <= 1 and not list(logdir.glob("**/.*.tmp")), runs
    if not runs:
        assert any(s in t.stderr for s in NO_TRACE) and "Traceback" not in t.stderr, t.stderr
        return "before the run"
    run = runs[0]
    info = json.loads((run / "run.json").read_text())
    assert info["status"] == "done" and info["exit_code"] == t.status, info
    assert info["window"]["cut_by"] in ENDINGS, info["window"]
    if not info["traces"]:
        assert any(s in t.stderr for s in NO_TRACE), t.stderr
        return "no trace, said why"
    assert all((run / name).exists() for name in info["traces"])
    if (run / "report.json").exists():
        assert json.loads((run / "report.json").read_text())["trace"]["steps"] is not None
        return "analysed"
    said = ("trace saved, not analysed: idlehound analyze", "analysis interrupted", "analysis terminated")
    assert any(s in t.stderr for s in said), t.stderr  # os._exit, or a signal during the analysis
    return "saved, said why not analysed"


def run_kind(zygote, tmp_path, make_trial, codes: set[int]) -> dict[str, int]:
    tally: dict[str, int] = {}
    for i in range(TRIALS):
        logdir = tmp_path / f"t{i}"
        t = make_trial(logdir, i)
        how = check(t, logdir, codes)
        tally[how] = tally.get(how, 0) + 1
    print(f"\n{tally}")
    return tally


@pytest.mark.parametrize("mode,code", [("raise", 1), ("exit", 7), ("os_exit", 9)])
def test_script_ends_at_step_n(zygote, tmp_path, mode, code):
    rng = random.Random(f"{SEED}-{mode}")
    tally = run_kind(
        zygote,
        tmp_path,
        lambda logdir, i: zygote.run(
            "--logdir", logdir, *WINDOW, FAULTS / "fault.py", mode, rng.randint(0, 10)
        ),
        {code},
    )
    assert sum(tally.values()) == TRIALS


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_at_a_random_moment(zygote, tmp_path, sig, code):
    rng = random.Random(f"{SEED}-{int(sig)}")
    tally = run_kind(
        zygote,
        tmp_path,
        lambda logdir, i: zygote.run(
            "--logdir",
            logdir,
            *WINDOW,
            FAULTS / "fault.py",
            "run",
            "0",
            signal=sig,
            delay=rng.uniform(0, 1.2),
        ),
        {code, -int(sig)},
    )
    assert sum(tally.values()) == TRIALS


@pytest.mark.parametrize("budget", [["--max-window-seconds", "0.2"], ["--max-window-mb", "8"]])
def test_window_past_its_budget(zygote, tmp_path, budget):
    t = zygote.run(
        "--logdir",
        tmp_path,
        "--no-stack",
        "--skip",
        "1",
        "--warmup",
        "1",
        "--active",
        "1000",
        *budget,
        FAULTS / "tiny_ops.py",
        "2000",
        "12",
        timeout=120,
    )
    assert check(t, tmp_path, {0}) == "analysed"
    info = json.loads(next(tmp_path.glob("*/run.json")).read_text())
    assert info["window"]["cut_by"] == ("time budget" if "seconds" in budget[0] else "memory budget")
