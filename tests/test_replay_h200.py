"""Replay predictions against interleaved A/B truths measured on an H200 (tests/device/replay_h200.py).

tests/traces/replay/<loop>/ holds each loop's run folder recorded under `idlehound run`; truths.json holds, per
loop, the mean unprofiled step (CUDA events, after warm-up) of the unchanged loop ("base") and of each fix, for
each of 3 interleaved rounds (base_<cause>: the base of a longer re-measurement of that fix).
See docs/measurements/replay-h200.md.
"""

import json
from pathlib import Path

import pytest

from idlehound.analysis._replay import FIXES
from idlehound.pipeline import analyze_path

from .conftest import TRACES

pytestmark = pytest.mark.slow  # analyses six recorded loops (seconds) before the first test

HERE = TRACES / "replay"
TRUTHS = json.loads((HERE / "truths.json").read_text()) if (HERE / "truths.json").exists() else {}
# Misses the replay does not explain yet, kept visible rather than hidden (see the measurements doc).
KNOWN_MISSES = {
    ("lightning_bar", "sync"): "A/B rounds 10%, 28%, -13%: the loop flips between 21 and 27 ms steps; the replay "
                               "predicts <1% and does not model Lightning's self.log host cost the fix also removes",
}
CASES = [pytest.param(loop, cause, marks=[pytest.mark.xfail(reason=KNOWN_MISSES[loop, cause], strict=True)]
                      if (loop, cause) in KNOWN_MISSES else [])
         for loop, t in sorted(TRUTHS.items()) for cause in t if not cause.startswith("base") if (HERE / loop).is_dir()]


def measured_gain(loop: str, cause: str) -> float:
    """Share of the unprofiled step the fix gave back: 1 - mean(fixed) / mean(base). A re-measurement keeps its
    own interleaved base as base_<cause>."""
    t = TRUTHS[loop]
    base = t.get(f"base_{cause}", t["base"])
    return 1 - sum(t[cause]) / len(t[cause]) / (sum(base) / len(base))


def predicted_gain(res, cause: str) -> float:
    a = res.analysis
    rate = a.observer["host_rate"]
    base = a.replay.play(rate=rate).step_ns
    return (base - a.replay.play(FIXES[cause], rate).step_ns) / base


@pytest.fixture(scope="module")
def results():
    return {loop: analyze_path(Path(HERE / loop)) for loop in sorted(TRUTHS) if (HERE / loop).is_dir()}


@pytest.mark.parametrize("loop", sorted(TRUTHS))
def test_unchanged_replay_matches_the_recorded_step(results, loop):
    obs = results[loop].analysis.observer
    assert obs["replayed_ms"] == pytest.approx(obs["recorded_ms"], rel=0.05)


@pytest.mark.parametrize("loop,cause", CASES)
def test_prediction_against_truth(results, loop, cause):
    res = results[loop]
    truth = measured_gain(loop, cause)
    pred = predicted_gain(res, cause)
    named = next((f for f in res.findings if f.cause == cause), None)
    if truth < 0.03:
        assert named is None or named.share < 0.05, f"named at {named.share:.1%}, A/B gain {truth:.1%}"
        return
    assert 0.5 * truth <= pred <= 2 * truth or abs(pred - truth) <= 0.05, f"predicted {pred:.1%}, A/B {truth:.1%}"
    if named is not None:
        assert named.share == pytest.approx(pred, abs=1e-9)
