"""The Trainers' framework-level syncs recorded on an H200 (tests/device/frameworks_h200.py), with the A/B truth of
the framework setting each finding recommends (tests/traces/frameworks_h200/truths.json; issue 18)."""

import json

import numpy as np
import pytest

from idlehound.pipeline import analyze_path

from .conftest import TRACES
from .test_replay_h200 import consistent, interval, predicted_gain

pytestmark = pytest.mark.slow  # analyses two recorded H200 run folders (seconds)
HERE = TRACES / "frameworks_h200"
TRUTHS = json.loads((HERE / "truths.json").read_text())


def truth(name: str) -> tuple[float, float, float]:
    t = TRUTHS[name]
    return interval(1 - np.array(t["sync"]) / np.array(t["base"]))


@pytest.fixture(scope="module")
def hf():
    return analyze_path(HERE / "hf_trainer")


@pytest.fixture(scope="module")
def lightning():
    return analyze_path(HERE / "lightning_prog_bar")


def test_hf_finding_names_the_library_line_the_user_line_and_the_setting(hf):
    f = hf.findings[0]
    assert f.cause == "sync"
    m = f.details["framework"][0]
    assert m["entry"] == "hf_nan_inf_filter"
    assert m["library"]["file"].endswith("transformers/trainer.py") and m["library"]["exact"]
    assert "torch.isnan(tr_loss_step)" in m["library"]["source"]
    assert m["user"]["file"].endswith("gpu_hf.py")
    assert "logging_nan_inf_filter=False" in f.code


def test_hf_prediction_holds_against_the_ab_of_the_setting(hf):
    mean, lo, hi = truth("hf_trainer")
    pred = predicted_gain(hf, "sync")
    assert mean > 0.03 and consistent(pred, lo, hi), (
        f"predicted {pred:.1%}, A/B {mean:.1%} [{lo:.1%}, {hi:.1%}]"
    )
    assert hf.findings[0].share == pytest.approx(pred, abs=1e-9)


def test_lightning_prediction_holds_and_the_library_table_shows_the_logging_read(lightning):
    mean, lo, hi = truth("lightning_prog_bar")
    pred = predicted_gain(lightning, "sync")
    assert consistent(pred, lo, hi), f"predicted {pred:.1%}, A/B {mean:.1%} [{lo:.1%}, {hi:.1%}]"
    files = [ln.location.file for ln in lightning.analysis.idle_library_lines if ln.location]
    assert any(f.endswith("lightning/fabric/utilities/apply_func.py") for f in files)


@pytest.mark.xfail(
    strict=True,
    reason="the replay predicts 3.9% for the per-step prog_bar log (A/B 5.6%), under "
    "the 5% bar a finding needs: the Lightning setting is not named yet (issue 18)",
)
def test_lightning_finding_names_the_setting(lightning):
    assert any(
        m["entry"].startswith("lightning") for f in lightning.findings for m in f.details.get("framework", [])
    )
