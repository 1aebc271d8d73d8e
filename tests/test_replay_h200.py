"""Replay predictions against interleaved A/B truths measured on an H200 (tests/device/replay_h200.py).

tests/traces/replay/<loop>/ holds each loop's run folder recorded under `idlehound run`; truths.json holds, per
loop, the mean unprofiled step (CUDA events, after warm-up) of the unchanged loop ("base") and of each fix, for
each interleaved round (base_<fix>: the base of the rounds of that fix where it was re-measured; "a+b": both
fixes applied together, checked against the replay's stack of the two).
A truth is a 95% interval over its rounds (each round's gain against its own base), not one number: a prediction
holds when it is within 0.5x-2x, or 5 points of the step, of some gain inside that interval.
See docs/measurements/replay-h200.md.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from idlehound.diagnose._predict import replay_fix
from idlehound.pipeline import analyze_path

from .conftest import TRACES

pytestmark = pytest.mark.slow  # analyses six recorded loops (seconds) before the first test

HERE = TRACES / "replay"
TRUTHS = json.loads((HERE / "truths.json").read_text()) if (HERE / "truths.json").exists() else {}
# Misses the replay does not explain yet, kept visible rather than hidden (see the measurements doc).
KNOWN_MISSES: dict[tuple[str, str], str] = {}
CASES = [
    pytest.param(
        loop,
        cause,
        marks=[pytest.mark.xfail(reason=KNOWN_MISSES[loop, cause], strict=True)]
        if (loop, cause) in KNOWN_MISSES
        else [],
    )
    for loop, t in sorted(TRUTHS.items())
    for cause in t
    if not cause.startswith("base")
    if (HERE / loop).is_dir()
]
T975 = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 7: 2.45, 8: 2.36, 9: 2.31, 10: 2.26, 11: 2.23, 12: 2.20}


def round_gains(loop: str, cause: str) -> np.ndarray:
    """Each round's gain: 1 - fixed / base of the same round."""
    t = TRUTHS[loop]
    base = np.array(t.get(f"base_{cause}", t["base"]))
    return 1 - np.array(t[cause]) / base


def interval(g: np.ndarray) -> tuple[float, float, float]:
    """Mean of the rounds' gains and its 95% interval (Student's t)."""
    half = T975.get(g.size, 2.0) * g.std(ddof=1) / np.sqrt(g.size)
    return float(g.mean()), float(g.mean() - half), float(g.mean() + half)


def measured_gain(loop: str, cause: str) -> tuple[float, float, float]:
    return interval(round_gains(loop, cause))


def consistent(pred: float, lo: float, hi: float) -> bool:
    """Is pred within 0.5x-2x, or 5 points, of some gain in [lo, hi]?"""
    near = lo - 0.05 <= pred <= hi + 0.05
    ratio = pred > 0 and pred / 2 <= hi and lo <= 2 * pred
    return near or ratio


def predicted_gain(res, cause: str) -> float:
    """The gain of the fix the findings name (a framework's setting may make another change than the generic
    one: Lightning's compile is torch.compile's default mode)."""
    a = res.analysis
    rate = a.observer["host_rate"]
    base = a.replay.play(rate=rate).step_ns
    return (base - a.replay.play(replay_fix(a, cause.split("+")), rate).step_ns) / base


@pytest.fixture(scope="module")
def results():
    return {loop: analyze_path(Path(HERE / loop)) for loop in sorted(TRUTHS) if (HERE / loop).is_dir()}


@pytest.mark.parametrize("loop", sorted(TRUTHS))
def test_unchanged_replay_matches_the_recorded_step(results, loop):
    obs = results[loop].analysis.observer
    assert obs["replayed_ms"] == pytest.approx(obs["recorded_ms"], rel=0.05)


def test_interval_logic():
    assert consistent(0.008, -0.04, 0.14) and not consistent(0.30, 0.02, 0.06)
    assert consistent(0.25, 0.28, 0.36) and not consistent(0.10, 0.28, 0.36)


@pytest.mark.parametrize("loop,cause", CASES)
def test_prediction_against_truth(results, loop, cause):
    res = results[loop]
    truth, lo, hi = measured_gain(loop, cause)
    pred = predicted_gain(res, cause)
    named = next((f for f in res.findings if f.cause == cause), None)
    if truth < 0.03:
        assert named is None or named.share < 0.05, f"named at {named.share:.1%}, A/B gain {truth:.1%}"
        return
    assert consistent(pred, lo, hi), f"predicted {pred:.1%}, A/B {truth:.1%} [{lo:.1%}, {hi:.1%}]"
    if named is not None:
        assert named.share == pytest.approx(pred, abs=1e-9)
