"""Lint the whole checkouts of the labelled repositories and list every flag (docs/lint.md's flag-count check).

    PYTHONPATH=src python benchmarks/lint_checkouts.py [LABELS.tsv ...] [--mirror DIR] > flags.txt

Every repository named in the label files (default: benchmarks/lint_public_labels.tsv and lint_heldout_*.tsv) is
written from its newest snapshot under the mirror (`git archive HEAD`, .py files and the .md/.rst/.sh files
lint reads for documented commands, with an empty `.git` as a clone's root; root `tests/` left out) and linted whole, as `idlehound lint .` in a clone would. One line per flag
(`repo path:line rule`), sorted, then the count per repository on stderr: diff two builds' outputs to read what a
change adds or removes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_lint_public import checkout_docs, git_dir, read_labels

from idlehound.errors import IdlehoundError
from idlehound.lint import lint_paths

HERE = Path(__file__).resolve().parent


def flags(gd: Path, tmp: Path) -> list[str]:
    archive = subprocess.run(
        ["git", "--git-dir", str(gd), "archive", "HEAD", "--", ":(glob)**/*.py"],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        return []
    subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=False)
    checkout_docs(gd, "HEAD", tmp)  # its README and scripts: a switch a documented command passes is on
    shutil.rmtree(tmp / "tests", ignore_errors=True)
    (tmp / ".git").mkdir(exist_ok=True)
    try:
        found = lint_paths([tmp])
    except IdlehoundError as e:
        print(f"{gd}: {e}", file=sys.stderr)
        return []
    return sorted({f"{Path(f.file).resolve().relative_to(tmp.resolve())}:{f.line} {f.rule}" for f in found})


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, default=Path(os.environ.get("IDLEHOUND_MIRROR", "/work/.mirror")))
    ap.add_argument("labels", nargs="*", type=Path)
    args = ap.parse_args(argv)
    files = args.labels or sorted(HERE.glob("lint_public_labels.tsv")) + sorted(
        HERE.glob("lint_heldout_*.tsv")
    )
    repos = sorted({lb.repo for f in files for lb in read_labels(f)})
    total = 0
    for repo in repos:
        gd = git_dir(args.mirror, repo)
        if not gd.is_dir():
            print(f"skipped {repo}: no snapshot at {gd}", file=sys.stderr)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            found = flags(gd, Path(tmp))
        for line in found:
            print(f"{repo} {line}")
        print(f"{repo}: {len(found)}", file=sys.stderr)
        total += len(found)
    print(f"{len(repos)} repositories, {total} flags", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
