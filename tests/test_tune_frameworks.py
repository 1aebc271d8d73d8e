"""tune's candidates for transformers.Trainer and Lightning: settings injected into the object the script builds,
diffs that edit its TrainingArguments(...) / Trainer(...) call (CPU; transformers is played by a stand-in)."""

import ast
import os
import subprocess

import pytest

from idlehound.tune import TuneOptions, _choose
from idlehound.tune._candidates import all_candidates
from idlehound.tune._diff import changed_source, make_diff

from .conftest import SCRIPTS, needs
from .tune_helpers import run_child

pytestmark = [pytest.mark.slow, needs("torch")]  # tune variants of framework scripts in child processes

TUNE = SCRIPTS / "tune"
CANDS = {c.name: c for c in all_candidates(4, cuda=True)}


def _child(tmp_path, settings):
    return run_child(tmp_path / "r.json", TUNE / "hf_trainer.py", settings, fake="fake_hf")


@pytest.fixture(scope="module")
def hf_base(tmp_path_factory):
    """The Trainer script as written, run once for the tests that read its baseline (its facts, its losses)."""
    return _child(tmp_path_factory.mktemp("hf_base"), {})


def test_trainer_settings_are_injected_into_the_scripts_training_arguments(tmp_path, hf_base):
    base = hf_base
    assert base["status"] == "ok" and base["loaders"][0]["num_workers"] == 0
    assert base["facts"]["transformers_args"]["dataloader_num_workers"] == 0
    assert base["facts"]["transformers_args"]["logging_nan_inf_filter"] is True
    workers = _child(tmp_path, CANDS["hf_workers"].settings)
    assert workers["status"] == "ok" and workers["loaders"][0]["num_workers"] == 2
    assert workers["losses"][:5] == base["losses"][:5]  # same seeds, same batches: the math is the script's


def test_trainer_candidates_are_chosen_for_a_trainer_script_and_left_out_elsewhere(hf_base):
    base = hf_base
    chosen, skipped = _choose(
        list(CANDS.values()), {"data_loading", "host_bound"}, base, False, TuneOptions()
    )
    names = [c.name for c in chosen]
    assert "hf_workers" in names and "hf_nan_filter" in names and "pl_benchmark" not in names
    why = {o.candidate: (o.status, o.reason) for o in skipped}
    assert why["workers2"] == (
        "not applicable",
        "the transformers Trainer builds the loaders: hf_workers sets them",
    )
    plain = {"loaders": [{"num_workers": 0}], "facts": {"optimizer": "SGD"}}
    chosen, skipped = _choose(list(CANDS.values()), {"data_loading"}, plain, False, TuneOptions())
    assert not any(c.framework for c in chosen) and not any(o.candidate.startswith("hf_") for o in skipped)
    _, skipped = _choose(list(CANDS.values()), set(), plain, False, TuneOptions(try_=["hf_compile"]))
    assert [(o.candidate, o.reason) for o in skipped] == [
        ("hf_compile", "the script builds no TrainingArguments")
    ]
    set_already = {
        **base,
        "facts": {
            **base["facts"],
            "transformers_args": {**base["facts"]["transformers_args"], "logging_nan_inf_filter": False},
        },
    }
    _, skipped = _choose(list(CANDS.values()), {"host_bound"}, set_already, False, TuneOptions())
    assert ("hf_nan_filter", "the script's Trainer sets logging_nan_inf_filter=False already") in [
        (o.candidate, o.reason) for o in skipped
    ]


def _applies(tmp_path, name, text, diff):
    (tmp_path / name).write_text(text)
    (tmp_path / "d.patch").write_text(diff)
    r = subprocess.run(
        ["patch", "--dry-run", "-p1", "-i", "d.patch"], cwd=tmp_path, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr


def _keywords(source, name):
    calls = [
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", "")) == name
    ]
    return [[k.arg for k in c.keywords if k.arg] for c in calls]


def test_the_diff_edits_the_training_arguments_call(tmp_path):
    script = TUNE / "hf_trainer.py"
    diff, snippets = make_diff(script, CANDS["hf_workers"].settings)
    added = [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    # the option the call sets is edited in place; those it does not go into the dict it passes as **extra
    assert added == [
        'extra = {"logging_steps": 10, "dataloader_persistent_workers": True, "dataloader_pin_memory": True}',
        'args = TrainingArguments(output_dir="out", per_device_train_batch_size=16, '
        "dataloader_num_workers=2, **extra)",
    ]
    assert snippets == []
    _applies(tmp_path, "hf_trainer.py", script.read_text(), diff)
    new, _ = changed_source(script.read_text(), CANDS["hf_workers"].settings)
    (kw,) = _keywords(new, "TrainingArguments")
    assert len(kw) == len(set(kw))
    both = {"hf_args": {**CANDS["hf_nan_filter"].settings["hf_args"], **CANDS["hf_bf16"].settings["hf_args"]}}
    diff, _ = make_diff(script, both)
    assert (
        '+extra = {"logging_steps": 10, "logging_nan_inf_filter": False, "bf16": True}' in diff.splitlines()
    )


LIGHTNING = """import lightning as L

cfg = {"max_steps": 100, "precision": "32-true"}
trainer = L.Trainer(accelerator="gpu", **cfg)
trainer.fit(model)
"""


def test_the_diff_edits_the_lightning_trainer_call_and_its_config_dict(tmp_path):
    script = tmp_path / "train_pl.py"
    script.write_text(LIGHTNING)
    settings = {
        "pl_args": {**CANDS["pl_bf16"].settings["pl_args"], **CANDS["pl_benchmark"].settings["pl_args"]}
    }
    diff, _ = make_diff(script, settings)
    added = [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert added == ['cfg = {"max_steps": 100, "precision": \'bf16-mixed\', "benchmark": True}']
    patched = tmp_path / "p"
    patched.mkdir()
    _applies(patched, "train_pl.py", LIGHTNING, diff)
    script.write_text("from lightning.pytorch import Trainer\ntrainer = Trainer(max_epochs=1)\n")
    diff, _ = make_diff(script, settings)
    assert "+trainer = Trainer(max_epochs=1, precision='bf16-mixed', benchmark=True)" in diff.splitlines()


def test_the_changed_trainer_script_runs_before_its_diff_is_shown(tmp_path, monkeypatch, forked_children):
    from idlehound.tune import _runs_changed

    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(TUNE / "fake_hf"), os.environ.get("PYTHONPATH", "")])
    )
    script = TUNE / "hf_trainer.py"
    new, _ = changed_source(script.read_text(), CANDS["hf_workers"].settings)
    assert _runs_changed(str(script), [], TuneOptions(timeout_s=300), tmp_path, new) == ""
    # persistent workers without workers: the stand-in raises, as transformers does
    broken = new.replace("dataloader_num_workers=2", "dataloader_num_workers=0")
    why = _runs_changed(str(script), [], TuneOptions(timeout_s=300), tmp_path, broken)
    assert why.startswith("failed when run: ValueError: persistent workers need dataloader_num_workers > 0")


def test_lightning_trainer_settings_are_injected_and_the_scripts_own_are_recorded(tmp_path, pl_trainer_base):
    def child(settings):
        return run_child(tmp_path / "r.json", TUNE / "pl_trainer.py", settings, fake="fake_pl")

    base = pl_trainer_base
    assert base["status"] == "ok"
    assert base["facts"]["lightning_args"] == {"precision": "32-true", "benchmark": None}
    assert not base["facts"]["cudnn_benchmark"]
    on = child(CANDS["pl_benchmark"].settings)
    assert on["facts"]["lightning_args"]["benchmark"] is True and on["facts"]["cudnn_benchmark"]
    assert on["losses"] == base["losses"]  # benchmark changes nothing on the CPU
    chosen, skipped = _choose(list(CANDS.values()), {"cudnn_benchmark"}, base, True, TuneOptions())
    assert "pl_benchmark" in [c.name for c in chosen] and not any(c.name.startswith("hf_") for c in chosen)
    assert ("cudnn_benchmark", "not applicable") not in [(o.candidate, o.status) for o in skipped]


def test_group_by_length_is_proposed_where_the_batches_carry_padding_and_not_applicable_where_none(
    tmp_path, hf_base
):
    padded = run_child(tmp_path / "p.json", TUNE / "hf_padded.py", {}, fake="fake_hf")
    share = padded["facts"]["padded_share"]  # 0-28 of 32 tokens padded, by the sample's index
    assert padded["status"] == "ok" and 0.35 < share < 0.65
    assert padded["facts"]["transformers_args"]["group_by_length"] is False
    chosen, _ = _choose(list(CANDS.values()), set(), padded, False, TuneOptions())
    assert "hf_group_by_length" in [c.name for c in chosen]  # proposed by the fact, with no diagnosed cause
    plain = hf_base  # the model is called positionally: no attention mask seen
    assert "padded_share" not in plain["facts"]
    _, skipped = _choose(list(CANDS.values()), set(), plain, False, TuneOptions(try_=["hf_group_by_length"]))
    why = {o.candidate: (o.status, o.reason) for o in skipped}
    assert why["hf_group_by_length"] == (
        "not applicable",
        "the model is not called with an attention mask: no padding to save is seen",
    )
    unpadded = {**padded, "facts": {**padded["facts"], "padded_share": 0.0}}
    _, skipped = _choose(
        list(CANDS.values()), set(), unpadded, False, TuneOptions(try_=["hf_group_by_length"])
    )
    assert [o.reason for o in skipped if o.candidate == "hf_group_by_length"] == [
        "the model's batches carry no padding: grouping samples by length changes nothing"
    ]
    barely = {
        **padded,
        "facts": {**padded["facts"], "padded_share": 0.012},
    }  # under the 3% a change must clear
    _, skipped = _choose(list(CANDS.values()), set(), barely, False, TuneOptions())
    assert [o.reason for o in skipped if o.candidate == "hf_group_by_length"] == [
        "1.2% of the tokens are padding: grouping by length could save no more than that"
    ]
    grouped = run_child(
        tmp_path / "g.json", TUNE / "hf_padded.py", CANDS["hf_group_by_length"].settings, fake="fake_hf"
    )
    assert grouped["status"] == "ok" and grouped["facts"]["transformers_args"]["group_by_length"] is True
    script = TUNE / "hf_padded.py"
    diff, _ = make_diff(script, CANDS["hf_group_by_length"].settings)
    assert (
        '+args = TrainingArguments(output_dir="out", per_device_train_batch_size=16, dataloader_num_workers=0, '
        "group_by_length=True)" in diff.splitlines()
    )
    _applies(tmp_path, "hf_padded.py", script.read_text(), diff)
