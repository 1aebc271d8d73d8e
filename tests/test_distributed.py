"""A real torch.distributed job (gloo, 2 ranks on the CPU) with one rank slowed: the straggler must be named,
with the line that makes it slow and the other rank's wait in its collectives."""

import json
import os
import subprocess
import sys

import pytest

from .conftest import SCRIPTS, needs

pytestmark = [pytest.mark.slow, needs("torch")]  # two-rank runs under torchrun

DDP = SCRIPTS / "dist" / "ddp_train.py"
WINDOW = ["--skip", "3", "--warmup", "1", "--active", "3"]


def _only(d):
    (run,) = [p for p in d.iterdir() if p.is_dir()]
    return run


def test_nproc_names_the_straggler_and_the_line(tmp_path, run_cli):
    r = run_cli("run", "--nproc", "2", "--logdir", tmp_path, *WINDOW, DDP, "12", env={"SLOW_RANK": "1"})
    assert r.returncode == 0, r.stderr[-2000:]
    run = _only(tmp_path)
    assert len(list(run.glob("rank*.pt.trace.json.gz"))) == 2
    assert json.loads((run / "run.rank1.json").read_text())["world_size"] == 2
    outer = json.loads((run / "run.json").read_text())
    assert (outer["world_size"], outer["backend"], outer["straggler"], outer["exit_code"]) == (
        2,
        "gloo",
        1,
        0,
    )
    doc = json.loads((run / "ranks.json").read_text())
    assert doc["world_size"] == 2 and doc["backend"] == "gloo"
    s = doc["straggler"]
    assert s["rank"] == 1 and s["excess_ms_per_step"] > 20
    assert (s["why_lines"][0]["file"], s["why_lines"][0]["line"]) == ("ddp_train.py", 24)  # time.sleep(0.03)
    waits = {r["rank"]: r["wait_ms"] for r in doc["ranks"]}
    # rank 0 waits ~30 ms a step less what it did meanwhile (19 ms on a loaded host)
    assert waits[0] > 10 and waits[1] == 0
    assert "rank 1 is the straggler" in r.stdout
    assert "<svg id='rank-chart'" in (run / "ranks.html").read_text()


def test_users_own_torchrun_shares_one_folder(tmp_path, run_cli):
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "-m",
        "idlehound",
        "run",
        "--logdir",
        str(tmp_path),
        *WINDOW,
        str(DDP),
        "12",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, "SLOW_RANK": "0"})
    assert r.returncode == 0, r.stderr[-2000:]
    run = _only(tmp_path)
    assert len(list(run.glob("rank*.pt.trace.json.gz"))) == 2
    doc = json.loads((run / "ranks.json").read_text())
    assert doc["straggler"]["rank"] == 0
    again = run_cli("analyze", "--ranks", "--json", run)
    assert json.loads(again.stdout)["straggler"]["rank"] == 0
