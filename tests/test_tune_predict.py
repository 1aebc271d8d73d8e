"""tune follows the diagnosis: candidates ordered by the replay's predicted gain (recorded GPU run folders), the
prediction shown beside the measurement, and --budget that leaves the least promising untried."""

import json

import pytest

from idlehound.analysis import overhead_at
from idlehound.pipeline import analyze_path
from idlehound.report.model import as_data
from idlehound.report.tune import legend, tune_markdown, versus
from idlehound.tune import TuneOptions, _document
from idlehound.tune._candidates import Outcome, all_candidates
from idlehound.tune._predict import Predictor

from .conftest import SCRIPTS, needs
from .tune_helpers import tune_cli

pytestmark = needs("torch")

TRACES = SCRIPTS.parent / "traces"
CANDS = all_candidates(16, cuda=True)


@pytest.fixture(scope="module")
def data_bound():
    return analyze_path(TRACES / "dataloader_bound")


def test_the_prediction_of_a_candidate_is_the_diagnosis_prediction_of_the_fix_it_makes(data_bound):
    p = Predictor(data_bound.analysis)
    (f,) = [f for f in data_bound.findings if f.cause == "data_loading"]
    predicted_step = f.details["replay"]["predicted_step_ms"]
    hf_workers = next(c for c in CANDS if c.name == "hf_workers")  # data_loading alone (the Trainer pins)
    assert p.speedup(hf_workers.fixes) == pytest.approx(f.step_ms / predicted_step, rel=1e-3)
    # on top of a stack that fixed the loader, CUDA graphs gain what remains of the launch cost; on the recorded
    # host time (no observer correction: this old run.json kept only a median, so the prior shrinks host work)
    with overhead_at(data_bound.analysis.replay, 0.0):
        alone, on_top = p.speedup(("launch_bound",)), p.speedup(("launch_bound",), ("data_loading",))
    assert 1.0 < alone < on_top  # hidden behind the loader, the launch cost shows once the loader is fixed
    lo, hi = p.speedup_range(("launch_bound",))
    assert lo <= p.speedup(("launch_bound",)) <= hi and lo < hi


def test_candidates_run_in_order_of_predicted_gain_and_those_without_one_keep_their_order(data_bound):
    p = Predictor(data_bound.analysis)
    order = p.ordered(CANDS)
    pred = [p.speedup(c.fixes) for c in order]
    known = [x for x in pred if x is not None]
    assert known == sorted(known, reverse=True) and pred[: len(known)] == known
    assert [c.name for c in order][:3] == ["workers4", "workers8", "workers12"]  # the loader: 3.8x predicted
    unpredicted = [c.name for c in order if p.speedup(c.fixes) is None]
    assert unpredicted == [c.name for c in CANDS if not c.fixes]  # today's order
    assert "fused_optimizer" in unpredicted and "channels_last" in unpredicted
    assert Predictor(None).ordered(CANDS) == CANDS  # no GPU profile: as listed
    fp32 = Predictor(analyze_path(TRACES / "fp32_math").analysis)
    assert fp32.ordered(CANDS)[0].name == "tf32" and fp32.speedup(("fp32_math",)) > 1.5


def _doc(tmp_path):
    base = Outcome("baseline", "the script as written", speedup=1.0, steps_per_s=10.0)
    w = Outcome(
        "workers4",
        "workers",
        speedup=3.5,
        speedup_ci=[3.2, 3.9],
        effect="faster",
        predicted=3.77,
        settings={"loader": {"num_workers": 4}},
    )
    g = Outcome(
        "cuda_graphs",
        "graphs",
        speedup=4.2,
        speedup_ci=[3.7, 4.8],
        gain=1.2,
        gain_ci=[1.1, 1.31],
        effect="faster",
        on_top_of="workers4",
        predicted=1.51,
        settings={"loader": {"num_workers": 4}, "cuda_graphs": True},
    )
    skipped = Outcome(
        "tf32", "TF32", status="skipped", reason="not tried: 7 more runs would not fit the --budget of 60 s"
    )
    return as_data(  # as the JSON reads (the document's Struct as plain data)
        _document(
            str(SCRIPTS / "tune" / "data_bound.py"),
            TuneOptions(budget_s=60.0),
            {"data_loading"},
            [base, w, g, skipped],
            tmp_path,
            {},
            None,
            None,
            {"available": True, "step_ms": 49.8, "host_rate": 1.0},
        )
    )


def test_the_prediction_stands_beside_the_measurement_in_markdown_and_the_terminal_legend(tmp_path):
    doc = _doc(tmp_path)
    assert doc["schema_version"] == 3 and doc["variants"][2]["predicted"] == 1.51
    by = {v["candidate"]: v for v in doc["variants"]}
    assert versus(by["workers4"]) == "predicted +277% / measured +250% [+220%, +290%]"
    assert versus(by["cuda_graphs"]) == "predicted +51% / measured +20% [+10%, +31%]"  # its gain on the stack
    assert versus(by["tf32"]) == "no prediction"
    md = tune_markdown(doc)
    assert "| predicted / measured |" in md and r"predicted +51% / measured +20% \[+10%, +31%\]" in md
    assert "largest predicted gain first" in md and "Budget 60 s" in md
    assert dict(legend(doc))["cuda_graphs"] == "graphs; predicted +51% / measured +20% [+10%, +31%]"
    assert json.loads(json.dumps(doc)) == doc


@pytest.mark.slow  # tune child processes: seconds each; CI runs it
def test_a_budget_too_short_for_an_experiment_leaves_it_untried_with_the_reason(tmp_path):
    r = tune_cli(
        "--skip",
        "2",
        "--steps",
        "4",
        "--min-rounds",
        "2",
        "--max-rounds",
        "2",
        "--json",
        "--no-diagnose",
        "--try",
        "fused_optimizer",
        "--budget",
        "1",
        "--logdir",
        tmp_path,
        SCRIPTS / "tune" / "no_loader.py",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    (v,) = [v for v in doc["variants"] if v["candidate"] == "fused_optimizer"]
    assert (
        v["status"] == "skipped" and v["reason"] == "not tried: 5 more runs would not fit the --budget of 1 s"
    )
    assert doc["budget_s"] == 1.0 and doc["wall_s"] > 0 and doc["best"] is None
    assert doc["prediction"] == {"available": False}
    assert (
        len(list((tmp_path / doc["run_dir"].split("/")[-1]).glob("baseline.*.json"))) == 2
    )  # no variant ran: no last one
    bad = tune_cli("--budget", "0", SCRIPTS / "tune" / "no_loader.py")
    assert bad.returncode == 2 and "--budget must be > 0" in bad.stderr


def test_a_spent_budget_stops_the_rounds_after_the_first_and_the_reference_still_closes_them():
    from idlehound.tune._stats import Schedule, measure_interleaved

    calls = []

    def measure(arm, i, pos):
        calls.append(arm)
        return 10.0 if arm == "baseline" else 8.0

    spent = {"yes": False}
    runs = measure_interleaved(
        "baseline", ["a", "b"], measure, Schedule(3, 5, seed=1, enough=lambda: spent["yes"])
    )
    assert [r.arm for r in runs].count("a") == 3  # not spent: the minimum rounds
    calls.clear()
    spent["yes"] = True
    runs = measure_interleaved(
        "baseline", ["a", "b"], measure, Schedule(3, 5, seed=1, enough=lambda: spent["yes"])
    )
    assert sorted(calls[1:3]) == ["a", "b"] and calls[0] == calls[-1] == "baseline" and len(calls) == 4


def test_a_sweep_that_does_not_fit_whole_is_cut_to_its_most_promising_head():
    """Three loader candidates need 2 + 3 x 2 runs and the changed script's check (90 s at 10 s a run); with
    room for 70 s the first (most promising) one still runs (the arithmetic: tests/test_tune_budget.py)."""
    from types import SimpleNamespace

    from idlehound.tune import _Budget
    from idlehound.tune._stats import Run

    sched = SimpleNamespace(min_rounds=3, early_rounds=None, room=None)
    runs = [Run("baseline", 0, 5.0), Run("baseline", 1, 5.0)]
    lab = SimpleNamespace(run_s=[10.0, 10.0], run_s_by={}, runs=runs, sched=sched)
    clock = _Budget(1000.0, lab)
    assert clock._fitting(3, left=150.0) == 3
    assert clock._fitting(3, left=60.0) == 1  # one candidate, its reference and the check: 50 s
    assert clock._fitting(3, left=45.0) == 0
