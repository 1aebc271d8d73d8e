"""tune under --budget: the fit estimate against what the Schedule really runs, the two-round exit of a decided
arm (simulated noisy runner with drift: it triggers on a decisive effect only and never accepts a no-op), the
rounds kept for the later candidates that matter, and a whole tune on a simulated clock (no processes)."""

import math
import random
from types import SimpleNamespace

import pytest
from rich.console import Console

import idlehound.tune as tune
from idlehound.report.model import as_data
from idlehound.report.tune import legend, render_tune, tune_html, tune_markdown
from idlehound.tune import TuneOptions, _Budget, run_tune
from idlehound.tune._predict import Predictor
from idlehound.tune._stats import (
    Run,
    Schedule,
    decided,
    effect,
    interval,
    log_ratios,
    measure_interleaved,
)

from .conftest import SCRIPTS, needs

pytestmark = needs("torch")


def _runner(true_ms, drift, noise, seed, total=20):
    rng = random.Random(seed)

    def measure(arm, i, pos):
        return true_ms[arm] * (1 + drift * pos / total) * math.exp(rng.gauss(0, noise))

    return measure


def _verdicts(runs, arm):
    iv = interval(log_ratios(runs, "base", arm))
    return sum(r.arm == arm for r in runs), effect(iv), iv


@pytest.mark.parametrize("drift", [-0.25, 0.0, 0.2])
def test_the_two_round_exit_takes_decisive_arms_only_and_never_accepts_a_no_op(drift):
    true = {"base": 50.0, "noop": 50.0, "double": 25.0, "ten": 50.0 / 1.1}
    noop_early_faster, double_early, covered, noop_faster = 0, 0, 0, 0
    for seed in range(300):
        sched = Schedule(3, 5, seed=seed, early_rounds=2)
        runs = measure_interleaved("base", ["noop", "double", "ten"], _runner(true, drift, 0.02, seed), sched)
        n, verdict, iv = _verdicts(runs, "noop")
        noop_early_faster += n == 2 and verdict == "faster"
        noop_faster += verdict == "faster"
        assert ("noop" in sched.left_early) == (n == 2)
        if (
            n == 2
        ):  # left early: only as "cannot be faster by the margin" (the verdict is the final interval's)
            assert verdict != "faster"
        n, verdict, iv = _verdicts(runs, "double")
        assert verdict == "faster"
        double_early += n == 2 and "double" in sched.left_early
        covered += iv.low <= 2.0 <= iv.high
        n, verdict, iv = _verdicts(runs, "ten")
        assert n > 2 or "ten" in sched.left_early  # only a decided arm leaves before the minimum rounds
    assert noop_early_faster == 0 and noop_faster <= 3  # 300 no-ops: 1% at most, none at the early look
    assert double_early >= 290  # a 2x speed-up is decided in two rounds: the rounds go to the others
    assert covered >= 280  # its interval still holds the true speed-up about 95% of the time


def test_without_a_budget_no_arm_leaves_before_the_minimum_rounds():
    runs = measure_interleaved(
        "base", ["double"], _runner({"base": 50.0, "double": 25.0}, 0.0, 0.02, 0), Schedule(3, 5)
    )
    assert _verdicts(runs, "double")[0] >= 3
    assert decided(interval([0.69, 0.70])) and decided(interval([-0.2, -0.21]))  # 2x faster; 18% slower
    assert not decided(interval([0.02, -0.01])) and not decided(interval([0.7]))  # undecided; one round


def _lab(run_s, runs, now=()):
    sched = SimpleNamespace(min_rounds=3, early_rounds=None, room=None)
    return SimpleNamespace(
        run_s=run_s,
        run_s_by={"baseline": run_s[:2]},
        runs=runs,
        sched=sched,
        held_back=False,
        predictor=Predictor(None),
        predicted_now=lambda: list(now),  # the replay's speed-ups for the arms timed now
    )


def test_the_fit_counts_the_runs_the_schedule_makes():
    """The H200 HF tune (tune-h200-c): 138 s budget, 54 s spent on two baseline runs and the diagnosis; at ~12 s
    a run the old estimate asked 3 rounds x 2 + 1 + 2 = 9 runs (108 s) for one candidate and tried nothing. The
    Schedule makes 2 rounds (the first reference is the run just made) + the closing reference = 4 runs, and the
    end keeps back the changed script's short check: 60 s, which fits."""
    lab = _lab([12.0, 12.0], [Run("baseline", 0, 8.0), Run("baseline", 1, 8.0)])
    clock = _Budget(138.0, lab)
    assert lab.sched.early_rounds == 2 and lab.sched.room == clock.room
    assert clock.need(1, 2) == (4, 48.0) and clock.kept_back() == (1, 12.0)
    assert clock._fitting(1, left=84.0) == 1
    assert clock._fitting(3, left=84.0) == 2  # three arms: 108 s, two: 84 s: the sweep is cut to its head
    assert clock._fitting(3, left=59.0) == 0
    # a later candidate predicted to gain: its 2 rounds (5 runs, 60 s) come before a 2nd arm
    clock.later_pred = [1.5]
    assert clock._fitting(3, left=84.0) == 1 and clock._fitting(3, left=144.0) == 2
    assert clock._fitting(1, left=60.0) == 1  # the head itself is never held back
    clock.later_pred = []
    clock.ref = "workers8"  # on top of a stack: its reference opens the first round, and the end needs the
    assert clock.need(1, 2)[0] == 5 and clock.kept_back() == (2, 24.0)  # last baseline run beside the check


def test_rounds_beyond_the_second_leave_room_for_the_later_candidates_that_matter(monkeypatch):
    now = {"t": 0.0}
    monkeypatch.setattr(tune, "time", SimpleNamespace(monotonic=lambda: now["t"]))
    lab = _lab([10.0] * 4, [Run("baseline", 0, 8.0)])
    clock = _Budget(100.0, lab)
    now["t"] = 40.0  # 60 s left; after the round reference: one arm, the closing run, the check: 30 s
    assert clock.room(2, 1) and clock.room(2, 2) and not lab.held_back
    clock.later_pred = [1.5]  # one later candidate predicted to gain: its 2 rounds (5 runs, 50 s) come first
    assert clock.room(2, 1)  # the second round is the minimum: it runs
    assert not clock.room(2, 2) and lab.held_back  # a third would take the later candidate's time
    now["t"] = 75.0
    assert not clock.room(2, 1)  # 25 s left: not even the second round


def test_a_third_round_of_the_most_promising_arm_is_not_held_back_for_candidates_predicted_to_gain_less(
    monkeypatch,
):
    """The H200 HF tune: torch.compile, predicted +32%, measured 1.51x in two rounds (interval 0.76-2.99x) was
    stopped to keep room for four candidates predicted +18-19%; none of them fitted after it."""
    monkeypatch.setattr(tune, "time", SimpleNamespace(monotonic=lambda: 0.0))
    timed = [1.32]
    lab = _lab([10.0] * 4, [Run("baseline", 0, 8.0)], now=timed)
    # 60 s left: a third round (30 s) fits, a later candidate's rounds beside it not
    clock = _Budget(60.0, lab)
    clock.later_pred = [1.19, 1.18, 1.18, 1.18]
    assert clock.ahead() == 0 and clock.room(2, 2) and not lab.held_back
    timed[:] = [1.1]  # the arm now timed is predicted to gain less than they are: their rounds come first
    assert clock.ahead() == 4 and not clock.room(2, 2) and lab.held_back
    timed[:] = [None]  # no prediction for it: every later candidate predicted to gain is kept
    assert clock.ahead() == 4


class _Replay(Predictor):
    """The replay's predictions, stubbed: torch.compile (its default mode) and CUDA graphs +80%, bf16 (fp32_math)
    +30%."""

    GAINS = {"compile": 1.8, "launch_bound": 1.8, "fp32_math": 1.3}

    def __init__(self):
        super().__init__(None)

    @property
    def available(self):
        return True

    def speedup(self, fixes, below=()):
        gains = [self.GAINS[f] for f in fixes if f in self.GAINS]
        return gains[0] if gains else None

    def summary(self):
        return {"available": True, "step_ms": 50.0, "host_rate": 1.0}


@pytest.mark.slow  # run_tune imports torch (its CUDA check): seconds on the 2-core host
def test_a_tune_on_a_simulated_clock_tries_the_most_promising_candidate_within_the_budget(
    monkeypatch, tmp_path
):
    """The HF case on a simulated clock: runs of 12 s, a 30 s diagnosis, --budget 138. torch.compile (2x, the
    largest prediction) is tried and decided in two rounds; what no longer fits is skipped with its prediction."""
    now = {"t": 0.0}
    monkeypatch.setattr(tune, "time", SimpleNamespace(monotonic=lambda: now["t"]))
    rng = random.Random(0)

    def child(script, args, settings, opts, out, script_dir=""):
        now["t"] += 12.0
        ms = 25.0 if settings.get("compile") else 50.0
        return {
            "status": "ok",
            "ms_per_step": ms * (1 - 0.1 * now["t"] / 138) * math.exp(rng.gauss(0, 0.01)),
            "losses": [2.0 - 0.01 * i for i in range(20)],
            "loaders": [],
            "facts": {"optimizer": "Adam", "optimizer_fused_or_foreach": False, "autocast": False},
        }

    def diagnose(script, args, opts, run_dir):
        now["t"] += 30.0
        return {"launch_bound", "fp32_math"}, _Replay()

    monkeypatch.setattr(tune, "_run_child", child)
    monkeypatch.setattr(tune, "_diagnosed_causes", diagnose)
    opts = TuneOptions(steps=10, skip=2, logdir=tmp_path, budget_s=138.0)
    doc = as_data(run_tune(str(SCRIPTS / "tune" / "no_loader.py"), [], opts, progress=lambda *a: None))
    by = {v["candidate"]: v for v in doc["variants"]}
    assert by["compile"]["status"] == "ok" and by["compile"]["effect"] == "faster"
    assert by["compile"]["rounds"] == 2 and by["compile"]["reason"].startswith("decided after 2 of 3 rounds")
    assert by["compile"]["predicted"] == 1.8 and doc["best"]["candidate"] == "compile"
    assert by["bf16"]["status"] == "skipped" and by["bf16"]["reason"].startswith("not tried: ")
    assert by["bf16"]["predicted"] == 1.3  # shown although it did not run
    assert by["cuda_graphs"]["status"] == "skipped" and by["cuda_graphs"]["predicted"] == 1.8  # needs CUDA
    assert by["fused_optimizer"]["predicted"] is None  # the replay has no model of it
    assert doc["wall_s"] <= 138.0
    # every candidate's prediction in the terminal legend, the markdown and the HTML, run or not
    assert dict(legend(doc))["bf16"].endswith("; predicted +30% / not measured")
    assert "predicted +30% / not measured" in tune_markdown(doc)
    assert "predicted +80% / not measured" in tune_html(doc)  # cuda_graphs, which needs CUDA
    console = Console(record=True, width=200)
    render_tune(doc, console)
    text = console.export_text()
    assert "bf16 autocast around the model's forward; predicted +30% / not measured" in text
