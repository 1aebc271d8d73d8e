"""Lint fixes of the cross-set round on code the default run does not reach every step (issue 32 item 13, all
of sets A to V at once, one convention: code reached only under an option off by default is not per step). A
switch the default run leaves off (`if args.use_amp:` where `--use_amp` is `store_true`) is not per-step code.
Each idiom is written here from scratch, with a healthy twin beside each silence (the true pattern still
flagged)."""

from __future__ import annotations

from pathlib import Path

from idlehound.lint import lint_paths

from .lint_snippets import found as _found
from .lint_snippets import project as _project

_SWITCHES = """\
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--use_amp", action="store_true")
parser.add_argument("--norm-log", default=None)
parser.add_argument("--log-loss", action="store_false")
args = parser.parse_args()


def train(model, loader, opt):
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if args.use_amp:
            print(loss.item())
        if args.norm_log and x.dim() > 1:
            print(x.norm().item())
        if args.log_loss:
            print(loss.item())
"""


def test_a_switch_declared_off_is_not_taken_every_step(tmp_path):
    # `store_true` and `default=None` leave the switch off: only a run that passes it pays the sync
    assert ("IH001", 20) not in _found(tmp_path, _SWITCHES)
    assert ("IH001", 22) not in _found(tmp_path, _SWITCHES)


def test_a_switch_declared_on_is_still_reported(tmp_path):
    # `store_false` is on by default: its branch runs every step
    assert ("IH001", 24) in _found(tmp_path, _SWITCHES)


def test_a_switch_any_code_assigns_is_still_reported(tmp_path):
    code = _SWITCHES.replace(
        "args = parser.parse_args()\n", "args = parser.parse_args()\nargs.use_amp = True\n"
    )
    assert ("IH001", 21) in _found(tmp_path, code)


def test_a_switch_a_declaration_turns_on_is_still_reported(tmp_path):
    # a second declaration (another entry point) with `default=True`: not off everywhere
    code = _SWITCHES.replace(
        "args = parser.parse_args()\n", "parser.set_defaults(use_amp=True)\nargs = parser.parse_args()\n"
    )
    assert ("IH001", 21) in _found(tmp_path, code)


_MODE = """\
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--do_train", action="store_true")
args = parser.parse_args()


def main(model, loader, opt):
    if args.do_train:
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
            loss.backward()
            opt.step()
            print(loss.item())
"""


def test_a_switch_around_the_training_loop_is_the_run_mode(tmp_path):
    # `if args.do_train:` wraps the loop itself: every run that trains passes it, so the loop's syncs count
    assert ("IH001", 16) in _found(tmp_path, _MODE)


_ARGUMENTS = """\
def add_args(parser):
    parser.add_argument("--extra-step", action="store_true")
    return parser
"""

_LOOP = """\
import torch

from arguments import add_args


def train(args, model, loader, opt):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
        loss.backward()
        opt.step()
        if args.extra_step:
            print(loss.item())
        print(loss.item())
"""


def _lint(root: Path, name: str) -> list[tuple[str, int]]:
    return sorted((f.rule, f.line) for f in lint_paths([root / name]))


def test_a_switch_declared_off_in_another_module_is_found_there(tmp_path):
    root = _project(tmp_path, {"arguments.py": _ARGUMENTS, "train.py": _LOOP})
    # the switch's branch is silent; the healthy twin outside it (every step) is still reported
    assert _lint(root, "train.py") == [("IH001", 13)]


def test_a_switch_a_documented_command_passes_is_on(tmp_path):
    # the README's training command passes --use_amp: the documented run takes the branch every step
    readme = "Train:\n\n    python t.py --lr 0.1 \\\n        --use_amp\n"
    (tmp_path / "README.md").write_text(readme)
    assert ("IH001", 20) in _found(tmp_path, _SWITCHES)


def test_a_switch_a_shell_script_passes_is_on(tmp_path):
    (tmp_path / "train.sh").write_text("set -e\npython t.py --norm-log x\n")
    assert ("IH001", 22) in _found(tmp_path, _SWITCHES)


def test_a_switch_only_a_prose_tip_names_stays_off(tmp_path):
    # "add --use_amp to train faster" is a tip, not the documented command
    (tmp_path / "README.md").write_text(
        "Train:\n\n    python t.py\n\nYou can add --use_amp to save memory.\n"
    )
    assert ("IH001", 20) not in _found(tmp_path, _SWITCHES)
    # another option's name that only starts with the switch's is not the switch
    (tmp_path / "run.sh").write_text("python t.py --use_amp_level 2\n")
    assert ("IH001", 20) not in _found(tmp_path, _SWITCHES)
