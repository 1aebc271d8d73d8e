"""`.pre-commit-hooks.yaml`: `idlehound lint` as a pre-commit hook, tried in a throw-away git repository.

`pre-commit try-repo` installs idlehound into its own environment with pip, which works offline where pip is
pointed at a local index (as on the project's machines); where that install cannot reach a package index the
try-repo test is skipped with pre-commit's reason, and the hook's entry is still run as pre-commit runs it."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .conftest import ROOT, SCRIPTS

pytestmark = pytest.mark.slow

PLANTED = SCRIPTS / "planted" / "sync_item.py"  # .item() at line 16, print(loss) at 17


def _hook() -> dict:
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    return hook


def _repo(tmp_path: Path, files: dict[str, Path]) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    for name, src in files.items():
        shutil.copy(src, repo / name)
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=repo, check=True)
    return repo


def test_the_hook_is_idlehound_lint_on_python_files():
    hook = _hook()
    assert hook["id"] == "idlehound-lint" and hook["entry"] == "idlehound lint"
    assert hook["language"] == "python" and hook["types"] == ["python"]


def test_the_hooks_entry_fails_on_a_trap_and_passes_clean_code(tmp_path):
    """What pre-commit runs: the entry with the staged file names appended."""
    repo = _repo(tmp_path, {"train.py": PLANTED, "clean.py": SCRIPTS / "lint" / "clean.py"})
    entry = [sys.executable, "-m", "idlehound", *_hook()["entry"].split()[1:]]
    bad = subprocess.run([*entry, "train.py", "clean.py"], cwd=repo, capture_output=True, text=True)
    assert bad.returncode == 1 and "train.py:16:" in bad.stdout and "train.py:17:" in bad.stdout
    good = subprocess.run([*entry, "clean.py"], cwd=repo, capture_output=True, text=True)
    assert good.returncode == 0 and good.stdout == ""


def test_pre_commit_try_repo_runs_the_hook(tmp_path):
    if shutil.which("pre-commit") is None and not _has_module("pre_commit"):
        pytest.skip("pre-commit is not installed (the dev extra installs it)")
    if subprocess.run(["git", "ls-files", "--error-unmatch", ".pre-commit-hooks.yaml"], cwd=ROOT).returncode:
        pytest.skip("try-repo reads tracked files: .pre-commit-hooks.yaml is not in git here")
    repo = _repo(tmp_path, {"train.py": PLANTED})
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "cache"),
    }  # a fresh environment, none of the user's
    r = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "idlehound-lint", "--all-files"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = r.stdout + r.stderr
    if "An unexpected error has occurred" in out and "Installing environment" in out:
        pytest.skip(f"pre-commit could not install the hook's environment offline: {out.splitlines()[-1]}")
    assert r.returncode == 1, out
    assert "idlehound lint" in out and "Failed" in out
    assert "train.py:16:13: IH001 item-in-loop" in out and "train.py:17:5: IH005 print-tensor" in out


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None
