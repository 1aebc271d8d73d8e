"""A generic cause's fix phrased as the setting of the framework that runs the loop (diagnose/frameworks/),
on H200 recordings of a Hugging Face Trainer and a Lightning Trainer; plain loops keep the generic fix."""

import pytest
from markupsafe import escape

from idlehound.diagnose.frameworks import runner
from idlehound.pipeline import analyze_path
from idlehound.report.html import render_html
from idlehound.report.markdown import render_markdown

from .conftest import TRACES, analysed

REPLAY = TRACES / "replay"


@pytest.fixture(scope="module")
def hf():
    return analysed(REPLAY / "hf_gpt2")


@pytest.fixture(scope="module")
def pl():
    return analysed(REPLAY / "lightning_bar")


def _finding(res, cause):
    return next(f for f in res.findings if f.cause == cause)


def test_the_trainer_that_runs_the_loop_is_recognised(hf, pl):
    # the HF Trainer runs on accelerate: transformers is named, not accelerate
    assert (runner(hf.analysis).name, runner(hf.analysis).words) == (
        "transformers",
        "the Hugging Face Trainer",
    )
    assert (runner(pl.analysis).name, runner(pl.analysis).words) == ("lightning", "the Lightning Trainer")
    assert runner(analyze_path(REPLAY / "tiny_host").analysis) is None


def test_hf_launch_bound_fix_is_the_trainers_compile_setting(hf):
    f = _finding(hf, "launch_bound")
    assert f.code == 'args = TrainingArguments(..., torch_compile=True, torch_compile_mode="reduce-overhead")'
    assert f.details["framework_setting"] == "transformers"
    assert "torch.compile(model" in f.details["generic_fix"]["code"]  # the plain-loop fix is kept
    assert any("inside the Hugging Face Trainer" in e for e in f.evidence)


def test_lightning_fixes_name_its_own_places_and_keep_the_worker_count(pl):
    data = _finding(pl, "data_loading")
    generic = data.details["generic_fix"]["code"]
    n = generic.split("num_workers=")[1].split(",")[0]
    assert data.code.startswith("loader = DataLoader(") and f"num_workers={n}," in data.code
    assert (
        "trainer.fit(model, loader)" in data.code
    )  # a script without train_dataloader() is not told to edit one
    assert _finding(pl, "launch_bound").code.startswith("model = torch.compile(model)")


@pytest.mark.parametrize("loop,cause", [("tiny_host", "launch_bound"), ("micro_item", "fp32_math")])
def test_plain_loops_keep_the_generic_fix(loop, cause):
    f = _finding(analyze_path(REPLAY / loop), cause)
    assert "generic_fix" not in f.details and "framework_setting" not in f.details
    assert "TrainingArguments" not in f.code and "Trainer" not in f.code


def test_the_setting_is_the_same_in_json_markdown_and_html(hf):
    doc = hf.doc
    (f,) = [f for f in doc["findings"] if f["cause"] == "launch_bound"]
    assert f["code"].startswith("args = TrainingArguments(")
    assert f["code"] in render_markdown(doc)
    assert str(escape(f["code"])) in render_html(doc)  # escaped as the template escapes it
