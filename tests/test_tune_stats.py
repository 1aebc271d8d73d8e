"""tune's interleaved measurement and intervals on a simulated noisy runner whose machine drifts (no processes)."""

import math
import random

import pytest

from idlehound.tune._stats import (
    Interval,
    Run,
    Schedule,
    drift_pct,
    effect,
    interval,
    log_ratios,
    measure_interleaved,
)


def _runner(true_ms, drift, noise, seed, total=40):
    """Time per step of each run: the arm's true time x the machine's drift at that point x lognormal noise.

    drift: the machine's speed factor moves linearly by this fraction over `total` runs (-0.2: 20% faster by the end).
    """
    rng = random.Random(seed)

    def measure(arm, i, pos):
        return true_ms[arm] * (1 + drift * pos / total) * math.exp(rng.gauss(0, noise))

    return measure


def _speedup(runs, arm):
    return interval(log_ratios(runs, "base", arm))


@pytest.mark.parametrize("drift", [-0.15, -0.25, 0.2])
def test_a_no_op_under_drift_is_no_measurable_effect(drift):
    verdicts = []
    for seed in range(30):
        measure = _runner({"base": 50.0, "noop": 50.0}, drift, 0.02, seed, total=12)
        runs = measure_interleaved("base", ["noop"], measure, Schedule(seed=seed))
        verdicts.append(effect(_speedup(runs, "noop")))
        assert abs(drift_pct(runs, "base") - 100 * drift * (len(runs) - 1) / 12) < 10
    assert verdicts == ["no measurable effect"] * 30


def test_the_old_design_baselines_first_then_the_variant_turns_the_same_drift_into_a_speed_up():
    # what tune did before: two baseline runs back to back, then each variant once, against their mean
    measure = _runner({"base": 50.0, "noop": 50.0}, -0.2, 0.0, seed=0, total=12)
    base = (measure("base", 0, 0) + measure("base", 1, 1)) / 2
    later = measure("noop", 0, 6)
    assert base / later > 1.05  # reported as a 5+% win


@pytest.mark.parametrize("drift", [-0.2, 0.0, 0.2])
def test_a_real_one_point_three_speed_up_is_accepted_and_its_interval_holds_it(drift):
    covered = 0
    for seed in range(20):
        measure = _runner({"base": 50.0, "fast": 50.0 / 1.3, "noop": 50.0}, drift, 0.03, seed, total=20)
        runs = measure_interleaved("base", ["fast", "noop"], measure, Schedule(seed=seed))
        iv = _speedup(runs, "fast")
        assert effect(iv) == "faster" and abs(iv.estimate - 1.3) < 0.1
        assert effect(_speedup(runs, "noop")) == "no measurable effect"
        covered += iv.low <= 1.3 <= iv.high
    assert covered >= 17  # a 95% interval: about 19 of 20 hold the true speed-up


def test_a_real_slowdown_is_called_slower():
    measure = _runner({"base": 50.0, "slow": 50.0 / 0.23}, -0.2, 0.03, seed=1, total=12)
    runs = measure_interleaved("base", ["slow"], measure, Schedule())
    assert effect(_speedup(runs, "slow")) == "slower" and _speedup(runs, "slow").high < 0.3


def test_rounds_stop_at_the_minimum_when_tight_and_run_to_the_budget_when_noisy():
    quiet = measure_interleaved("base", ["a"], _runner({"base": 50.0, "a": 40.0}, 0.0, 0.002, 0), Schedule())
    noisy = measure_interleaved("base", ["a"], _runner({"base": 50.0, "a": 40.0}, 0.0, 0.2, 0), Schedule())
    assert [r.arm for r in quiet] == ["base", "a"] * 3 + ["base"]
    assert [r.arm for r in noisy] == ["base", "a"] * 5 + ["base"]


def test_each_round_starts_with_the_reference_shuffles_the_arms_and_a_failed_arm_leaves():
    def measure(arm, i, pos):
        return None if arm == "broken" else 10.0

    runs = measure_interleaved(
        "base", ["a", "b", "c", "broken"], measure, Schedule(min_rounds=3, max_rounds=3)
    )
    rounds = [[r.arm for r in runs[i : i + 4]] for i in (5, 9)]
    assert runs[0].arm == "base" and runs[-1].arm == "base" and [r.position for r in runs] == list(range(14))
    assert sorted(r.arm for r in runs[:5]) == ["a", "b", "base", "broken", "c"]
    assert all(rnd[0] == "base" and sorted(rnd[1:]) == ["a", "b", "c"] for rnd in rounds)
    orders = {tuple(r.arm for r in runs[i : i + 5] if r.arm not in ("base", "broken")) for i in (0, 5, 9)}
    assert len(orders) > 1  # not the same order every round


def test_the_reference_is_interpolated_between_the_runs_around_each_arm_run():
    runs = [Run("base", 0, 100.0), Run("a", 1, 50.0), Run("base", 2, 25.0)]
    assert log_ratios(runs, "base", "a") == [pytest.approx(0.0)]  # geometric middle of 100 and 25
    assert interval([0.1]).high == math.inf and effect(interval([0.1])) == "no measurable effect"


def test_a_gain_on_top_of_a_stack_combines_both_intervals():
    stack, gain = Interval(math.log(2.0), 0.01, 4), Interval(math.log(1.5), 0.02, 2)
    both = stack.times(gain)
    assert both.estimate == pytest.approx(3.0) and both.df == 2
    assert both.half_width() > gain.half_width()
