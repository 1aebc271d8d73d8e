"""benchmarks/bench_lint_public.py scores lint against labels of a git snapshot: a finding on a line the set does
not label is a false alarm as labelled, is listed by --unjudged for someone to label, and counts by its label once
the set's `.adjudicated.tsv` gives it one (the first table, as labelled, stays the same)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRAIN = """\
import torch

def train(model, loader, opt):
    for x, y in loader:
        loss = model(x.cuda()).sum()
        loss.backward()
        opt.step()
        seen = loss.item()
        kept = loss.item()
        print(
            "loss", loss,
        )
"""
HEAD = "# repo\tcommit\tpath\tline\trule\texpect\tnote\n"


def _bench():
    spec = importlib.util.spec_from_file_location(
        "bench_lint_public", ROOT / "benchmarks" / "bench_lint_public.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def _mirror(tmp_path: Path, more: dict[str, str] | None = None) -> tuple[Path, str]:
    """A mirror folder as the fetch tool leaves it (OWNER+NAME/repo, a bare git dir) holding train.py (and more)."""
    work = tmp_path / "work"
    work.mkdir()
    files = {"train.py": TRAIN, **(more or {})}
    for name, text in files.items():
        (work / name).write_text(text)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(work)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", *files], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    commit = subprocess.run(
        [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    mirror = tmp_path / "mirror"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirror / "o+r" / "repo")], check=True)
    return mirror, commit


def _rows(commit: str, *rows: tuple[int, str, str], path: str = "train.py") -> str:
    return HEAD + "".join(f"o/r\t{commit}\t{path}\t{n}\t{rule}\t{want}\tnote\n" for n, rule, want in rows)


def _totals(out: str) -> list[list[str]]:
    return [line.split()[1:4] for line in out.splitlines() if line.startswith("all ")]


@pytest.mark.slow  # git and lint in-process: about a second
def test_an_unlabelled_finding_is_listed_and_scored_by_its_adjudicated_label(tmp_path, capsys):
    bench = _bench()
    mirror, commit = _mirror(tmp_path)
    labels = tmp_path / "set_X.tsv"
    # line 9, the second .item(), left unlabelled; the print labelled where its tensor is, not where lint names it
    labels.write_text(_rows(commit, (8, "IH001", "true"), (11, "IH005", "true")))
    todo = tmp_path / "todo.tsv"

    bench.main([str(labels), "--mirror", str(mirror), "--unjudged", str(todo)])
    out = capsys.readouterr().out
    # the print statement's finding (line 10) matches its label at 11
    assert _totals(out) == [["2", "1", "0"]]
    assert "train.py:9: false alarm (line not labelled) IH001" in out
    assert todo.read_text() == f"o/r\t{commit}\ttrain.py\t9\tIH001\t\tkept = loss.item()\n"

    labels.with_name("set_X.adjudicated.tsv").write_text(_rows(commit, (9, "IH001", "true")))
    bench.main([str(labels), "--mirror", str(mirror), "--unjudged", str(todo)])
    out = capsys.readouterr().out
    assert _totals(out) == [["2", "1", "0"], ["3", "0", "0"]]  # as labelled, then with the adjudicated label
    assert todo.read_text() == ""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("side", "line", "refused"),
    [
        ("adjudicated", 8, "relabels lines the set labels already"),  # labels only lines the set left out
        ("convention", 9, "changes lines no label names"),  # changes only lines some label names
    ],
)
def test_a_side_file_naming_the_wrong_lines_is_refused(tmp_path, side, line, refused):
    bench = _bench()
    mirror, commit = _mirror(tmp_path)
    labels = tmp_path / "set_X.tsv"
    labels.write_text(_rows(commit, (8, "IH001", "true")))
    labels.with_name(f"set_X.{side}.tsv").write_text(_rows(commit, (line, "IH001", "false")))
    with pytest.raises(SystemExit, match=refused):
        bench.main([str(labels), "--mirror", str(mirror)])


@pytest.mark.slow
def test_a_labelled_file_that_is_not_python_3_is_left_out_and_the_rest_scored(tmp_path, capsys):
    bench = _bench()
    old = "import torch\n\ndef run(loss):\n    f(async=True)\n    return loss.item()\n"  # Python 2's keyword
    mirror, commit = _mirror(tmp_path, {"old.py": old})
    labels = tmp_path / "set_X.tsv"
    labels.write_text(
        _rows(commit, (8, "IH001", "true")) + _rows(commit, (5, "IH001", "true"), path="old.py")[len(HEAD) :]
    )
    bench.main([str(labels), "--mirror", str(mirror)])
    out = capsys.readouterr().out
    assert "skipped o/r old.py: not valid Python 3" in out
    assert "1 files of 1 repositories, 1 labelled lines" in out
    assert _totals(out) == [["1", "2", "0"]]  # train.py alone: its lines 9 and 10 are found and not labelled


@pytest.mark.slow
def test_a_file_that_starts_with_a_byte_order_mark_is_scored(tmp_path, capsys):
    bench = _bench()
    mirror, commit = _mirror(tmp_path, {"bom.py": "\ufeff" + TRAIN})  # stylegan2-ada's files start with one
    labels = tmp_path / "set_X.tsv"
    labels.write_text(_rows(commit, (8, "IH001", "true"), path="bom.py"))
    bench.main([str(labels), "--mirror", str(mirror)])
    out = capsys.readouterr().out
    assert "skipped" not in out
    assert "1 files of 1 repositories, 1 labelled lines" in out
    assert _totals(out) == [["1", "2", "0"]]  # line 8 found as labelled; 9 and the print not labelled


@pytest.mark.slow
def test_a_convention_change_is_scored_in_a_third_table_and_the_first_two_stay(tmp_path, capsys):
    bench = _bench()
    mirror, commit = _mirror(tmp_path)
    labels = tmp_path / "set_X.tsv"
    labels.write_text(_rows(commit, (8, "IH001", "true"), (9, "IH001", "false"), (11, "IH005", "true")))
    labels.with_name("set_X.adjudicated.tsv").write_text(_rows(commit, (12, "IH005", "false")))
    # the print's label changed to false (say, an opt-in switch): its finding becomes a false alarm
    labels.with_name("set_X.convention.tsv").write_text(_rows(commit, (11, "IH005", "false")))
    bench.main([str(labels), "--mirror", str(mirror)])
    out = capsys.readouterr().out
    assert _totals(out) == [["2", "1", "0"], ["2", "1", "0"], ["1", "2", "0"]]
    assert "the 1 changes of set_X.convention.tsv, IH015 counted once per repository" in out


NET = """\
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        return self.conv(x)
"""
SCRIPT = """\
import torch
from net import Net

model = Net().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    x = torch.randn(8, 3, 32, 32, device="cuda")
    loss = model(x).sum()
    loss.backward()
    opt.step()
"""


@pytest.mark.slow
def test_cudnn_benchmark_labelled_on_the_script_matches_the_modules_finding_once_per_repository(
    tmp_path, capsys
):
    bench = _bench()
    mirror, commit = _mirror(tmp_path, {"net.py": NET, "main.py": SCRIPT})
    labels = tmp_path / "set_X.tsv"
    # the label on the line that builds the model; net.py, linted beside it, labelled for another rule only
    labels.write_text(_rows(commit, (4, "IH015", "true"), path="main.py"))
    labels.write_text(labels.read_text() + _rows(commit, (9, "IH001", "false"), path="net.py")[len(HEAD) :])
    bench.main([str(labels), "--mirror", str(mirror), "--convention"])
    out = capsys.readouterr().out
    assert "net.py:6: false alarm (line not labelled) IH015" in out  # lint places it at the convolution here
    assert "main.py:4: missed IH015" in out
    assert _totals(out) == [["0", "1", "1"], ["1", "0", "0"]]  # as labelled; once per repository
