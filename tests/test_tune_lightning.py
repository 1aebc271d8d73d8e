"""tune's pl_log_epoch: a LightningModule that logs a tensor with prog_bar=True per step (the progress bar reads it
on the host every batch) gets it logged per epoch, injected at run time and as a diff of its self.log(...) call;
not applicable where nothing logs with prog_bar per step (the real lightning package, CPU)."""

import ast
import subprocess
from types import SimpleNamespace

import pytest

from idlehound.tune import TuneOptions, _choose, _runs_changed
from idlehound.tune._candidates import all_candidates
from idlehound.tune._changes import step_prog_bar_logs
from idlehound.tune._child import _watch_lightning_log
from idlehound.tune._diff import changed_source, make_diff

from .conftest import SCRIPTS, needs
from .tune_helpers import run_child

# Skipped without torch or Lightning, which are not imported here: importing Lightning takes ~5 s (torchmetrics,
# transformers), paid only by the tests below that read its real _FxValidator (slow).
pytestmark = needs("torch", "lightning")

SCRIPT = SCRIPTS / "tune" / "pl_prog_bar.py"
CANDS = {c.name: c for c in all_candidates(4, cuda=True)}
SETTINGS = CANDS["pl_log_epoch"].settings


class _Module:
    """LightningModule.log as Lightning declares it, recording what it was called with."""

    calls: list = []

    def __init__(self, fx):
        self._current_fx_name = fx

    def log(self, name, value, prog_bar=False, logger=None, on_step=None, on_epoch=None, **kw):
        self.calls.append((name, prog_bar, on_step, on_epoch))


def _watched(overrides):
    from lightning.pytorch.trainer.connectors.logger_connector.fx_validator import _FxValidator

    cls = type("LightningModule", (_Module,), {"calls": []})
    rec = SimpleNamespace(framework={}, overrides=overrides)
    _watch_lightning_log(SimpleNamespace(LightningModule=cls, _FxValidator=_FxValidator), rec)
    return cls, rec


@pytest.mark.slow  # imports Lightning (its _FxValidator): ~5 s on the 2-core host
def test_the_watcher_finds_per_step_prog_bar_tensors_and_the_change_logs_them_per_epoch():
    import torch

    loss = torch.tensor(0.5)
    cls, rec = _watched({})
    cls("training_step").log("train_loss", loss, prog_bar=True)  # Lightning's default there: per step
    cls("training_step").log("lr", 0.1, prog_bar=True)  # a float: nothing to read from the device
    cls("training_step").log("acc", loss, on_step=True)  # not on the progress bar
    cls("validation_step").log("val_loss", loss, prog_bar=True)  # per epoch by default
    cls("on_train_epoch_end").log("epoch_loss", loss, True)  # prog_bar given by position; per epoch
    assert rec.framework == {"lightning_step_prog_bar": ["train_loss"]}
    assert cls.calls[0] == ("train_loss", True, None, None)  # as written: the change is off
    cls, rec = _watched({"pl_log_epoch": True})
    cls("training_step").log("train_loss", loss, prog_bar=True)
    cls("on_train_batch_end").log("speed", loss, True, None, True)  # on_step=True by position
    cls("validation_step").log("val_loss", loss, prog_bar=True)
    assert cls.calls == [
        ("train_loss", True, False, True),
        ("speed", True, False, True),
        ("val_loss", True, None, None),
    ]
    assert rec.framework == {"lightning_step_prog_bar": ["train_loss", "speed"]}


def _base(names):
    facts = {"optimizer": "SGD", "lightning_args": {"precision": "32-true", "benchmark": None}}
    return {"loaders": [{"num_workers": 0}], "facts": {**facts, "lightning_step_prog_bar": names}}


def test_it_is_proposed_where_the_script_logs_per_step_and_not_applicable_where_nothing_does():
    chosen, _ = _choose(list(CANDS.values()), set(), _base(["train_loss"]), False, TuneOptions())
    assert [c.name for c in chosen] == [
        "pl_log_epoch"
    ]  # proposed by the fact: a sync a loader-bound profile hides
    chosen, skipped = _choose(list(CANDS.values()), set(), _base([]), False, TuneOptions())
    assert chosen == [] and skipped == []
    _, skipped = _choose(list(CANDS.values()), {"sync"}, _base([]), False, TuneOptions())
    assert [(o.candidate, o.status, o.reason) for o in skipped] == [
        ("pl_log_epoch", "not applicable", "nothing is logged with self.log(..., prog_bar=True) per step")
    ]
    plain = {"loaders": [], "facts": {"optimizer": "SGD", "lightning_step_prog_bar": ["x"]}}
    assert (
        _choose(list(CANDS.values()), {"sync"}, plain, False, TuneOptions())[0] == []
    )  # no Lightning Trainer


HOOKS = """class Net(L.LightningModule):
    def training_step(self, batch, i):
        self.log("a", loss, prog_bar=True)
        self.log("b", loss, prog_bar=True, on_step=False, on_epoch=True)
        self.log("c", loss)
        return loss

    def validation_step(self, batch, i):
        self.log("d", loss, prog_bar=True)
        self.log("e", loss, prog_bar=True, on_step=True)

    def on_train_batch_end(self, *a):
        self.log(
            "f",
            loss,
            prog_bar=True,
        )
"""


def test_the_diff_edits_the_per_step_prog_bar_log_calls_and_applies_with_patch(tmp_path):
    assert [c.args[0].value for c in step_prog_bar_logs(ast.parse(HOOKS))] == ["a", "e", "f"]
    diff, snippets = make_diff(SCRIPT, SETTINGS)
    added = [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert added == ['            self.log("train_loss", loss, prog_bar=True, on_step=False, on_epoch=True)']
    assert snippets == []
    (tmp_path / SCRIPT.name).write_text(SCRIPT.read_text())
    (tmp_path / "d.patch").write_text(diff)
    r = subprocess.run(["patch", "-p1", "-i", "d.patch"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert step_prog_bar_logs(ast.parse((tmp_path / SCRIPT.name).read_text())) == []  # nothing left to change
    script = tmp_path / "no_log.py"
    script.write_text("import lightning as L\ntrainer = L.Trainer()\n")
    diff, snippets = make_diff(script, SETTINGS)
    assert diff == "" and "on_step=False, on_epoch=True" in snippets[0]


def _child(tmp_path, settings):
    out = tmp_path / f"r{len(list(tmp_path.glob('r*.json')))}.json"
    return run_child(out, SCRIPT, settings, steps=4, timeout=600)


@pytest.mark.slow  # three Lightning runs in child processes
def test_a_lightning_run_logs_per_epoch_with_the_same_math_and_the_changed_script_runs(
    tmp_path, forked_children
):
    base = _child(tmp_path, {})
    assert base["status"] == "ok" and base["facts"]["lightning_step_prog_bar"] == ["train_loss"]
    moved = _child(tmp_path, SETTINGS)
    assert moved["status"] == "ok" and moved["losses"] == base["losses"]  # logging changes no math
    new, _ = changed_source(SCRIPT.read_text(), SETTINGS)
    assert _runs_changed(str(SCRIPT), [], TuneOptions(timeout_s=600), tmp_path, new) == ""
