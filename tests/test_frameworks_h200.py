"""The Trainers' framework-level syncs recorded on an H200 (tests/device/frameworks_h200.py), with the A/B truth of
the framework setting each finding recommends (tests/traces/frameworks_h200/truths.json; issue 18)."""

import copy
import json

import numpy as np
import pytest

from idlehound.diagnose import Thresholds, diagnose
from idlehound.diagnose._finding import grade
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


def test_lightning_finding_names_the_setting_under_the_framework_bar(lightning):
    """3.9% predicted (A/B 5.6%): under the generic 5% bar, over the 2% one a named framework call gets."""
    f = next(f for f in lightning.findings if f.cause == "sync")
    assert f.details["framework"][0]["entry"].startswith("lightning")
    assert "on_step=False, on_epoch=True" in f.code and f.severity == "low"
    assert Thresholds().framework_min_share <= f.share < Thresholds().min_share
    assert f.share == pytest.approx(predicted_gain(lightning, "sync"), abs=1e-9)


def test_the_lower_bar_is_only_for_framework_named_causes(lightning):
    """The same trace with the framework table's match taken away: the generic 3.9% sync finding is dropped."""
    assert not [
        f for f in diagnose(lightning.analysis, Thresholds(framework_min_share=0.05)) if f.cause == "sync"
    ]
    plain = copy.deepcopy(next(f for f in lightning.findings if f.cause == "sync"))
    plain.details.pop("framework")
    assert grade(plain, Thresholds()) is None


def test_lightning_sync_finding_points_at_the_self_log_line(lightning):
    (f,) = [f for f in lightning.findings if f.cause == "sync"]
    assert (
        f.location.file.endswith("gpu_lightning.py") and f.location.line == 43
    )  # self.log(..., prog_bar=True)
