"""The counterfactual replay (docs/metrics.md, Replay) on the recorded H200 traces and the shared fixtures."""

import copy

import pytest

from idlehound.analysis import FIXES, analyze, overhead_at
from idlehound.diagnose import Thresholds, diagnose
from idlehound.diagnose._finding import clears_bar
from idlehound.pipeline import analyze_path
from idlehound.trace import load_trace

from .conftest import SHARED, TRACES, analysed


@pytest.fixture
def run_cli(forked_cli):
    """Each `idlehound ...` run as a fork of one torch-loaded interpreter (tests/_forkserver.py)."""
    return forked_cli


RUNS = sorted(p.name for p in TRACES.iterdir() if p.is_dir() and (p / "run.json").exists())
H200 = sorted(p.name for p in SHARED.glob("h200_*.pt.trace.json.gz")) if SHARED.exists() else []


@pytest.fixture(scope="module")
def results():
    return {name: analysed(TRACES / name) for name in RUNS}


@pytest.mark.parametrize("name", RUNS)
def test_unchanged_replay_reproduces_the_recorded_step(results, name):
    a = results[name].analysis
    obs = a.observer
    assert obs["replayed_ms"] == pytest.approx(obs["recorded_ms"], rel=0.05)
    assert obs["recorded_ms"] == pytest.approx(a.step_ms, rel=1e-6)


@pytest.mark.parametrize("name", H200)
def test_unchanged_replay_on_shared_fixtures(name):
    a = analyze(load_trace(SHARED / name))
    if a.replay is None:
        assert not a.gpu_recorded
        return
    with overhead_at(a.replay, 0.0):  # a bare trace is replayed with the prior: the unchanged model has none
        assert a.replay.play().step_ns == pytest.approx(a.replay.recorded_ns, rel=0.05)


def test_findings_show_the_replay_gain(results):
    for res in results.values():
        for f, js in zip(res.findings, res.doc["findings"]):
            if f.kind == "risk":
                continue
            gain = f.details["replay"]["gain_ms"]
            assert f.recoverable_ms == pytest.approx(gain)
            assert js["recoverable_ms_per_step"] == pytest.approx(gain, abs=1e-4)
            assert 0 <= gain <= f.step_ms
            lo, hi = js["recoverable_ms_range"]
            assert lo - 1e-4 <= js["recoverable_ms_per_step"] <= hi + 1e-4
        lows = [f.range_ms[0] for f in res.findings if f.kind != "risk"]
        assert lows == sorted(lows, reverse=True), "ranked by the low end of the predicted gain"


def test_removing_the_loader_wait_gives_back_about_the_exposed_wait(results):
    a = results["dataloader_bound"].analysis
    with overhead_at(a.replay, 0.0) as rp:  # the model as recorded, no observer correction
        base = rp.play().step_ns
        gain = base - rp.play(FIXES["data_loading"]).step_ns
        exposed = a.idle_ns["data_loading"] / a.n_steps
        assert 0.5 * exposed < gain <= base
        # Each fix is replayed from the same model: an unrelated fix changes little.
        assert base - rp.play(FIXES["fp32_math"]).step_ns < 0.05 * base


def test_fp32_gain_is_bounded_by_the_fp32_time(results):
    a = results["fp32_math"].analysis
    f = results["fp32_math"].findings[0]
    fp32_ms = a.per_step_ms(a.kernels.fp32_matmul_ns)
    assert 0.3 * fp32_ms < f.recoverable_ms <= 0.5 * fp32_ms + 0.05


def test_backlog_step_is_left_out(results):
    a = results["fp32_math"].analysis
    assert any("queued before the profiled window" in n for n in a.notes)
    durations = [s.duration_ns for s in a.steps]
    assert max(durations) < 1.05 * min(durations)  # only whole steady steps are averaged
    assert a.gpu_busy_pct > 99


def test_best_stack_is_reported(results):
    doc = results["dataloader_bound"].doc
    rep = doc["replay"]
    assert rep["best_stack"][0] == doc["findings"][0]["cause"]
    assert rep["best_stack_gain_ms"] >= doc["findings"][0]["recoverable_ms_per_step"] - 1e-3
    assert rep["best_stack_step_ms"] == pytest.approx(
        rep["predicted_step_ms"] - rep["best_stack_gain_ms"], abs=2e-3
    )


def test_headline_names_the_top_fix(results):
    for res in results.values():
        top = next((f for f in res.findings if clears_bar(f, Thresholds())), None)
        if top is not None:
            assert top.title.lower() in res.doc["headline"]
            assert f"{top.recoverable_ms:.2f} ms per step" in res.doc["headline"]


def test_no_cliff_at_the_short_kernel_share(results):
    a = results["launch_bound"].analysis
    causes = []
    for share in (0.491, 0.5):
        b = copy.copy(a)
        b.kernels = copy.copy(a.kernels)
        b.kernels.shorter_than_launch = share
        causes.append([(f.cause, round(f.recoverable_ms, 6)) for f in diagnose(b)])
    assert causes[0] == causes[1]


def _with_steps(name: str, before: list[float], after: list[float]):
    run = analyze_path(TRACES / name).analysis.run_info
    run = {**run, "step_ms_before_window": before, "step_ms_after_window": after}
    trace = load_trace(TRACES / name)
    return analyze(trace, run_info=run)


def test_observer_fit_uses_the_mean_of_steady_steps():
    # A saw-tooth: fast steps with a slower one every fourth step. The median would hide the slow steps.
    before = [50.0, 40.0, 30.0] + [6.0, 6.0, 6.0, 7.0] * 3
    a = _with_steps("sync_item", before, [9.0, 6.0, 6.0, 6.0, 7.0])
    obs = a.observer
    steady = before[3:] + [6.0, 6.0, 6.0, 7.0]
    assert obs["unprofiled_ms"] == pytest.approx(sum(steady) / len(steady))
    assert obs["correction"] == "fitted on this run"
    assert obs["overhead_us"] > 0 and obs["host_rate"] == 1.0  # the profiler's cost per event taken out
    assert obs["predicted_ms"] == pytest.approx(obs["unprofiled_ms"], rel=0.02)


def test_bursty_unprofiled_steps_are_not_fitted_to():
    # Stalls of 4x the step every fourth step: no one cost per event explains both; the prior is used, said so.
    before = [50.0, 40.0, 30.0] + [4.0, 4.0, 4.0, 16.0] * 3
    a = _with_steps("sync_item", before, [9.0, 4.0, 4.0, 4.0, 16.0])
    obs = a.observer
    assert obs["correction"].startswith("prior from ") and "bursts" in obs["fit_not_used"]
    assert any("bursts" in n and obs["correction"] in n for n in a.notes)


def test_old_run_json_with_only_a_median_uses_the_prior(results):
    obs = results["pageable"].analysis.observer  # run.json of an earlier version: median only
    assert obs["source"] == "median" and obs["correction"].startswith("prior from ")
    assert obs["host_rate"] == 1.0  # the fit put it at its floor (0.02) before: never a silent extreme
    assert "only the median" in obs["fit_not_used"]


def test_observer_note_only_when_the_profiler_inflated_the_step():
    slower = _with_steps("sync_item", [9.0] * 10, [9.0] * 5)  # unprofiled steps slower than profiled ones
    # no profiler cost explains a slower unprofiled step: the prior, with the reason, never a silent "fitted"
    assert slower.observer["host_rate"] == 1.0 and slower.observer["correction"].startswith("prior from ")
    assert "slower than the profiled ones (9.00 against 7.72 ms)" in slower.observer["fit_not_used"]
    assert not any("profiler inflated" in n for n in slower.notes)
    faster = _with_steps("sync_item", [7.0] + [6.2] * 9, [6.2] * 5)
    assert faster.observer["unprofiled_ms"] < 0.95 * faster.observer["recorded_ms"]
    assert faster.observer["overhead_us"] > 0
    (note,) = [n for n in faster.notes if "profiler inflated" in n]
    assert f"cost of {faster.observer['overhead_us']:.2f} µs out of each host event" in note


@pytest.mark.slow
def test_capture_records_every_unprofiled_step(tmp_path, run_cli):
    import json

    from .conftest import SCRIPTS

    r = run_cli(
        "run",
        "--logdir",
        tmp_path,
        "--skip",
        "6",
        "--warmup",
        "1",
        "--active",
        "2",
        "--no-report",
        SCRIPTS / "cpu" / "train_item.py",
        "20",
    )
    assert r.returncode == 0, r.stderr
    run = json.loads(next(tmp_path.glob("*/run.json")).read_text())
    before, after = run["step_ms_before_window"], run["step_ms_after_window"]
    # 20 steps: 6 before the profiler (the last of them already runs it), 1 + 2 in the window, the rest after.
    assert len(before) == 5 and len(after) == 20 - 6 - 3 - 1
    assert all(ms > 0 for ms in before + after)
