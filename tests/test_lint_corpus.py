"""Lint precision and recall on the labelled corpus, and one script per false-alarm/miss class of issue 17."""

import pytest

from idlehound.lint import lint_paths
from idlehound.lint._score import labels, score_files

from .conftest import SCRIPTS

CORPUS = SCRIPTS / "lint" / "corpus"


def test_corpus_meets_precision_and_recall_targets():
    files = sorted(CORPUS.glob("*.py"))
    s = score_files(files)
    assert s.cases >= 40
    assert sum(s.tp.values()) >= 40
    assert s.precision() >= 0.9, s.wrong
    assert s.recall() >= 0.9, s.wrong
    for rule in s.rule_ids():  # no single rule may hide behind the others
        assert s.precision(rule) >= 0.75 and s.recall(rule) >= 0.75, (rule, s.wrong)


@pytest.mark.parametrize(
    "name",
    [
        "kwargs_loaders.py",  # DataLoader(..., **kwargs) read through dicts, dict(), update(), kwargs[...] =
        "python_values.py",  # Python floats, ints, strings in `if` and `print` are not tensors
        "epoch_loops.py",  # an epoch loop calling train() and scheduler.step() is not a training loop
        "ddp_trainer.py",  # backward()/step() in a helper the loop calls (DDP tutorial)
        "amp_trainer.py",  # minGPT-style trainer with a GradScaler
        "gnn_full_batch.py",  # GNN full-batch: the step and the per-step evaluation live in helpers
        "accelerator.py",  # torch.accelerator, never the word cuda; plain Adam not flagged
    ],
)
def test_issue_class_script_is_exact(name):
    s = score_files([CORPUS / name])
    assert s.wrong == []


def test_score_counts_false_alarms_and_misses(tmp_path):
    f = tmp_path / "mislabelled.py"
    f.write_text(
        "import torch\nm = torch.nn.Linear(2, 2).cuda()\nopt = torch.optim.SGD(m.parameters())\n"
        "for x in range(3):\n"
        "    loss = m(torch.ones(2, device='cuda')).sum()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    v = loss.item()  # expect: none\n"
        "    w = loss.detach()  # expect: cpu-in-loop\n"
    )
    s = score_files([f])
    assert s.fp == {"IH001": 1} and s.fn == {"IH002": 1}
    assert s.precision() == 0.0 and s.recall() == 0.0


def test_unknown_label_is_an_error(tmp_path):
    f = tmp_path / "bad_label.py"
    f.write_text("x = 1  # expect: no-such-rule\n")
    with pytest.raises(ValueError, match="no-such-rule"):
        labels(f)


def test_cpu_only_script_is_quiet_and_the_same_loop_on_cuda_is_not(tmp_path):
    body = (
        "for x in loader:\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n"
        "    print(loss.item())\n"
    )
    cpu = tmp_path / "cpu.py"
    cpu.write_text(
        "import torch\nmodel = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters())\n"
        "loader = [torch.ones(2)]\n" + body
    )
    gpu = tmp_path / "gpu.py"
    gpu.write_text(cpu.read_text().replace("torch.nn.Linear(2, 1)", "torch.nn.Linear(2, 1).to(device)"))
    assert lint_paths([cpu]) == []
    assert [(f.rule, f.line) for f in lint_paths([gpu])] == [("IH001", 9)]


def test_files_linted_together_share_what_their_imports_show():
    """A pinned loader in main.py makes helpers.py's copies blocking; main.py's GPU reaches model.py's convs.
    A script in the same folder that imports none of them stays a CPU script."""
    project = SCRIPTS / "lint" / "project"
    found = {(f.file.rsplit("/", 1)[-1], f.rule, f.line) for f in lint_paths([project])}
    assert {f for f in found if f[0] in ("helpers.py", "model.py", "cpu_tool.py")} == {
        ("helpers.py", "IH012", 3),
        ("model.py", "IH015", 7),
    }
    assert lint_paths([project / "helpers.py"]) == []  # alone, nothing says it runs after a pinned loader


def test_a_step_imported_from_another_file_makes_a_training_loop():
    """loop_main.py loops over train_step / Stepper.step / steps.last_loss from steps.py: its loop is a training
    loop, and the helpers' bodies are checked in steps.py as code that runs every step."""
    project = SCRIPTS / "lint" / "project"
    found = {(f.file.rsplit("/", 1)[-1], f.rule, f.line) for f in lint_paths([project])}
    assert {f for f in found if f[0] in ("loop_main.py", "steps.py")} == {
        ("loop_main.py", "IH007", 12),
        ("loop_main.py", "IH005", 19),
        ("steps.py", "IH001", 6),
        ("steps.py", "IH007", 18),
    }
    alone = lint_paths([project / "loop_main.py"], project=False)
    assert alone == []  # without steps.py nothing says the loop trains
    # the project view reads steps.py (loop_main.py imports it) and reports its per-step lines at the calls
    viewed = {(f.rule, f.line, f.via) for f in lint_paths([project / "loop_main.py"])}
    assert viewed == {
        ("IH007", 12, ""),
        ("IH001", 14, "via train_step: steps.py:6 `return loss.item()`"),
        ("IH007", 18, "via stepper.step: steps.py:18 `if loss.isnan():`"),
        ("IH005", 19, ""),
    }
