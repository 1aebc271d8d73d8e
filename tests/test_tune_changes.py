"""tune's registry of changes (_changes): torch.compile for plain loops and for Lightning, each with its
injection, its no-op test and its diff edit; the Lightning Trainer's own settings found set already (CPU)."""

import ast
import subprocess

import pytest

from idlehound.tune import _Stack
from idlehound.tune._candidates import all_candidates, not_applicable
from idlehound.tune._changes import CHANGES
from idlehound.tune._diff import changed_source, make_diff

from .conftest import SCRIPTS, needs
from .tune_helpers import run_child

pytestmark = needs("torch")

TUNE = SCRIPTS / "tune"
CANDS = {c.name: c for c in all_candidates(4, cuda=True)}


def _child(tmp_path, script, settings, *args, fake=""):
    return run_child(tmp_path / "r.json", script, settings, *args, fake=fake)


def test_every_candidate_setting_is_owned_by_a_registered_change_with_its_injection_and_diff_edit():
    from idlehound.tune._changes import Change

    for ch in CHANGES.values():
        assert type(ch).inject is not Change.inject and type(ch).edit is not Change.edit, type(ch).__name__
    assert {k for c in all_candidates(16, cuda=True) for k in c.settings} <= set(CHANGES)
    order = list(CHANGES)  # the child injects in this order: autocast is entered before the graphs record
    assert order.index("autocast") < order.index("channels_last") < order.index("cuda_graphs")


@pytest.mark.slow  # tune child processes: seconds each; CI runs it
def test_compile_is_injected_at_the_models_first_call_and_is_not_applicable_where_the_script_compiles(
    tmp_path,
):
    base = _child(tmp_path, TUNE / "plain_loop.py", {})
    comp = _child(tmp_path, TUNE / "plain_loop.py", CANDS["compile"].settings)
    assert base["tune_compiles"] == 0 and comp["tune_compiles"] == 1 and comp["status"] == "ok"
    assert not comp["facts"]["compiled"]  # tune's own compile is not the script's
    assert comp["losses"] == base["losses"]  # the eager backend: the same math
    assert not_applicable(CANDS["compile"], base["facts"]) == ""
    own = _child(tmp_path, TUNE / "plain_loop.py", {}, "compile")
    assert own["facts"]["compiled"] is True
    assert (
        not_applicable(CANDS["compile"], own["facts"])
        == "the script compiles its model already (torch.compile)"
    )


def test_the_compile_diff_compiles_the_model_in_place_after_its_optimizer(tmp_path):
    script = TUNE / "plain_loop.py"
    diff, snippets = make_diff(script, CANDS["compile"].settings)
    added = [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert added == ["model.compile()  # idlehound tune: torch.compile in place (state_dict keys unchanged)"]
    new, _ = changed_source(script.read_text(), CANDS["compile"].settings)
    lines = new.splitlines()
    assert (
        lines.index(added[0]) == lines.index("optimizer = torch.optim.SGD(model.parameters(), lr=0.01)") + 1
    )
    (tmp_path / "plain_loop.py").write_text(script.read_text())
    (tmp_path / "d.patch").write_text(diff)
    r = subprocess.run(
        ["patch", "--dry-run", "-p1", "-i", "d.patch"], cwd=tmp_path, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_compile_replaces_cuda_graphs_in_a_stack_as_one_loader_setting_replaces_another():
    stack = _Stack((CANDS["workers2"], CANDS["cuda_graphs"]))
    settings, math = stack.plus(CANDS["compile"])
    assert settings["compile"] and "cuda_graphs" not in settings and settings["loader"]["num_workers"] == 2
    assert math == "precision"  # compiled kernels may round differently: the smoothed-curve check


@pytest.mark.slow  # tune child processes: seconds each; CI runs it
def test_lightning_compile_wraps_the_module_given_to_fit_and_its_diff_edits_the_fit_call(
    tmp_path, pl_trainer_base
):
    base = pl_trainer_base
    comp = _child(tmp_path, TUNE / "pl_trainer.py", CANDS["pl_compile"].settings, fake="fake_pl")
    assert comp["status"] == "ok" and comp["tune_compiles"] == 1 and base["tune_compiles"] == 0
    assert comp["losses"] == base["losses"] and not comp["facts"]["compiled"]
    assert comp["facts"]["convolutions"] == 1  # the whole LightningModule given to fit, not a submodule
    diff, _ = make_diff(TUNE / "pl_trainer.py", CANDS["pl_compile"].settings)
    added = [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert added == ["trainer.fit(torch.compile(Net()), torch.utils.data.DataLoader(data, batch_size=8))"]
    source = "import lightning as L\n\ntrainer = L.Trainer()\ntrainer.fit(model=module)\n"
    new, _ = changed_source(source, CANDS["pl_compile"].settings)
    assert "import torch  # idlehound tune" in new and "trainer.fit(model=torch.compile(module))" in new
    ast.parse(new)


@pytest.mark.slow  # tune child processes: seconds each; CI runs it
def test_lightning_precision_and_benchmark_set_by_the_script_or_useless_for_the_model_are_not_applicable(
    tmp_path, pl_trainer_base
):
    plain = _child(tmp_path, TUNE / "pl_settings.py", {}, "32-true", fake="fake_pl")["facts"]
    assert not_applicable(CANDS["pl_bf16"], plain) == ""
    assert not_applicable(CANDS["pl_benchmark"], plain) == "the model has no convolutions"
    set_ = _child(tmp_path, TUNE / "pl_settings.py", {}, "bf16-mixed", "benchmark", fake="fake_pl")["facts"]
    assert (
        not_applicable(CANDS["pl_bf16"], set_) == "the script's Trainer sets precision='bf16-mixed' already"
    )
    assert not_applicable(CANDS["pl_benchmark"], set_) == "the script's Trainer sets benchmark=True already"
    conv = pl_trainer_base["facts"]
    assert not_applicable(CANDS["pl_benchmark"], conv) == ""


def test_plain_loop_changes_that_a_transformers_trainer_cannot_take_are_not_applicable_there():
    facts = {"transformers_args": {"torch_compile": False}, "weights_4d": 0}
    assert not_applicable(CANDS["cuda_graphs"], facts).startswith(
        "the transformers Trainer calls the model with keywords"
    )
    assert not_applicable(CANDS["compile"], facts).startswith("a framework's Trainer runs the model")
    assert not_applicable(CANDS["channels_last"], facts) == "the model has no 4-D weights"
    assert not_applicable(CANDS["cuda_graphs"], {"weights_4d": 2}) == ""
