"""A `--watch` run recorded on the H200 (tests/device/watch_h200.py, 2026-12-05): a GPU loop whose loader turns 5x
slower after step 300 got a window from the slowdown trigger; its CUDA-event step clock and both windows are read
here as a user's `idlehound report RUN` reads them, on any machine."""

import json
import shutil

import pytest

from .conftest import TRACES

pytestmark = pytest.mark.slow  # runs the CLI

RUN = TRACES / "watch" / "h200_slow_loader"
SLOW_AFTER, K = 300, 20


def test_the_recorded_slowdown_window_is_compared_with_the_first(tmp_path, run_cli):
    run = tmp_path / RUN.name
    shutil.copytree(RUN, run)  # report writes beside the run; never into the repository
    (w,) = [json.loads(p.read_text()) for p in run.glob("windows/step*/window.json")]
    assert w["reason"].startswith("slower") and SLOW_AFTER < w["start_step"] <= SLOW_AFTER + 2 * K
    header = json.loads((run / "steps.jsonl").read_text().splitlines()[0])
    assert header["clock"] == "cuda_events"
    r = run_cli("report", run, "-o", tmp_path / "r.html")
    assert r.returncode == 0, r.stderr
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("window at step")]
    assert "grew most: data loading" in line and "slow_loader_gpu.py:28" in line
    before, after = (float(x) for x in line.split("step time ")[1].split(" ms")[0].split(" -> "))
    assert after > 1.5 * before  # the loader's 5x on ~40% of the step
    html = (tmp_path / "r.html").read_text()
    assert "id='step-curve'" in html and html.count("class='window'") == 2
