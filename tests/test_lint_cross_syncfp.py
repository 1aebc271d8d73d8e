"""Host-sync false alarms (IH001-IH007) fixed in the cross-set round of issue 32 (developed on sets A-N at once):
a branch whose test is false with the options it compares at their declared defaults (`if args.chunks > 1:`
declared 1, `elif opt.method == "pretrain":` declared "plain", `if i < args.warm_iters:` declared 0) is not run by
the default run. Each idiom is written here from scratch, with a healthy twin beside each silence (the option's
default takes the branch, so the sync is reported)."""

from __future__ import annotations

from pathlib import Path

from idlehound.lint import lint_paths

from .lint_snippets import found as _found
from .lint_snippets import project as _project

_CHUNKS = """\
import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--chunks", type=int, default=1)
args = parser.parse_args()
model = torch.nn.Linear(8, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
total = 0.0
for x in torch.randn(100, 4, 8).cuda():
    if args.chunks > 1:
        for part in torch.chunk(x, args.chunks):
            loss = model(part).mean()
            loss.backward()
            total += loss.item()
    else:
        loss = model(x).mean()
        loss.backward()
    opt.step()
"""


def test_a_branch_needing_an_option_above_its_default_is_not_the_default_run(tmp_path):
    # `--chunks` defaults to 1: `args.chunks > 1` is false unless the user sets it, so its `.item()` is quiet
    assert _found(tmp_path, _CHUNKS) == []


def test_the_same_branch_is_reported_when_the_default_takes_it(tmp_path):
    assert _found(tmp_path, _CHUNKS.replace("default=1)", "default=2)")) == [("IH001", 15)]


def test_an_option_set_in_code_is_not_judged_by_its_declared_default(tmp_path):
    # something else sets it (a config, a sweep): the declared default says nothing about the run
    src = _CHUNKS.replace("args = parser.parse_args()\n", "args = parser.parse_args()\nargs.chunks = 4\n")
    assert _found(tmp_path, src) == [("IH001", 16)]


_WARM = """\
import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--warm_iters", type=int, default=0)
args = parser.parse_args()
model = torch.nn.Linear(8, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(1000):
    x = torch.randn(4, 8, device="cuda")
    if i < args.warm_iters:
        scale = float(x.abs().max())
        x = x / scale
    loss = model(x).mean()
    loss.backward()
    opt.step()
"""


def test_a_count_below_an_option_declared_zero_never_holds(tmp_path):
    assert _found(tmp_path, _WARM) == []


def test_a_count_below_an_option_declared_above_zero_is_reported(tmp_path):
    assert _found(tmp_path, _WARM.replace("default=0)", "default=500)")) == [("IH006", 12)]


_TRAIN = """\
import argparse
import torch
from stages import pretrain

parser = argparse.ArgumentParser()
parser.add_argument("--method", type=str, default="plain", choices=["plain", "pretrain"])
opt = parser.parse_args()
model = torch.nn.Linear(8, 1).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
if opt.method == "plain":
    pass
elif opt.method == "pretrain":
    pretrain(model, optimizer)
for x in torch.randn(100, 4, 8).cuda():
    loss = model(x).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""

_STAGES = """\
import torch


def pretrain(model, optimizer):
    for x in torch.randn(10, 4, 8).cuda():
        loss = model(x).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(loss.item())
"""


def _lint(root: Path, *names: str) -> list[tuple[str, str, int]]:
    return sorted((Path(f.file).name, f.rule, f.line) for f in lint_paths([root / n for n in names]))


def test_a_stage_called_only_for_another_choice_of_an_option_is_quiet(tmp_path):
    # `--method` defaults to "plain": the pre-training stage (a loop of its own in a context module) is not run
    root = _project(tmp_path / "p", {"train.py": _TRAIN, "stages.py": _STAGES})
    assert _lint(root, "train.py") == []


def test_the_stage_is_reported_when_the_default_choice_calls_it(tmp_path):
    root = _project(
        tmp_path / "p",
        {"train.py": _TRAIN.replace('default="plain"', 'default="pretrain"'), "stages.py": _STAGES},
    )
    assert _lint(root, "train.py") == [("train.py", "IH001", 13)]


def test_a_model_config_attribute_is_not_an_option_of_the_same_name(tmp_path):
    # `self.config.chunks` is the model's setting, not the `--chunks` a script declares: still per step
    src = _CHUNKS.replace("if args.chunks > 1:", "if model.config.chunks > 1:")
    assert _found(tmp_path, src) == [("IH001", 15)]
