"""Precision and recall of `idlehound lint` on public training scripts the rules were not written against.

    PYTHONPATH=src python benchmarks/bench_lint_public.py [LABELS.tsv] [--mirror DIR]

LABELS.tsv (or `--labels`) defaults to benchmarks/lint_public_labels.tsv; lint_heldout_A.tsv, lint_heldout_B.tsv
and lint_heldout_C.tsv are the sets registered for issue 32 (see docs/lint.md).

The scripts are not part of this repository: benchmarks/lint_public_labels.tsv names each labelled line by
repository, commit, path, line and rule, with `true` (lint should report it) or `false` (a look-alike it should
not), labelled by reading the code before lint was run on it. The files are read from git snapshots of those
repositories under the mirror folder (`OWNER+NAME/repo`, as the `fetch` tool leaves them; default /work/.mirror,
or IDLEHOUND_MIRROR); a repository or commit not there is skipped with one line saying so.

The labelled files of one repository are linted together (as `idlehound lint` on the checkout would pair files
that import one another), inside the checkout's Python files at that commit: lint's project view reads the
project's own modules they import (as it would in a user's clone); `--files-only` writes only the labelled files
(the scoring before the project view). Every finding on a line not labelled `true` for its rule is a false alarm, every `true`
label not found a miss. IH015 (cudnn.benchmark never set) is a fact of the file: any IH015 in a file matches that
file's IH015 label, wherever lint puts it.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from idlehound.lint import RULES, lint_paths

HERE = Path(__file__).resolve().parent
LABELS = HERE / "lint_public_labels.tsv"
FILE_LEVEL = {"IH015"}


@dataclass(frozen=True)
class Label:
    repo: str
    commit: str
    path: str
    line: int
    rule: str
    expect: bool
    note: str


def read_labels(path: Path) -> list[Label]:
    out = []
    with path.open(newline="") as f:
        for row in csv.reader(f, delimiter="\t"):
            if not row or row[0].startswith("#"):
                continue
            repo, commit, rel, line, rule, expect, note = row
            if rule not in RULES or expect not in ("true", "false"):
                raise SystemExit(f"{path}: bad label row {row}")
            out.append(Label(repo, commit, rel, int(line), rule, expect == "true", note))
    return out


def git_dir(mirror: Path, repo: str) -> Path:
    return mirror / repo.replace("/", "+") / "repo"


def materialise(gd: Path, commit: str, paths: list[str], into: Path, checkout: bool = True) -> str:
    """Write each path as it is at commit under `into` (and, with `checkout`, every .py file of the commit, for
    lint's project view); '' when done, else why not."""
    if not gd.is_dir():
        return f"no snapshot at {gd}"
    if checkout:
        archive = subprocess.run(
            ["git", "--git-dir", str(gd), "archive", commit, "--", ":(glob)**/*.py"],
            capture_output=True,
            check=False,
        )
        if archive.returncode == 0:
            subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=False)
            (into / ".git").mkdir(exist_ok=True)  # the project root a clone has (lint's view stops there)
    for rel in paths:
        shown = subprocess.run(
            ["git", "--git-dir", str(gd), "show", f"{commit}:{rel}"], capture_output=True, check=False
        )
        if shown.returncode != 0:
            return f"{rel} is not at commit {commit[:10]} in {gd}"
        dest = into / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(shown.stdout)
    return ""


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, default=Path(os.environ.get("IDLEHOUND_MIRROR", "/work/.mirror")))
    ap.add_argument("labels_file", nargs="?", type=Path, help="label TSV (default: lint_public_labels.tsv)")
    ap.add_argument("--labels", type=Path, default=LABELS)
    ap.add_argument(
        "--files-only", action="store_true", help="write only the labelled files, not the checkout"
    )
    args = ap.parse_args(argv)

    labels = read_labels(args.labels_file or args.labels)
    by_repo: dict[tuple[str, str], list[Label]] = defaultdict(list)
    for lb in labels:
        by_repo[(lb.repo, lb.commit)].append(lb)

    tp: dict[str, int] = defaultdict(int)
    fp: dict[str, int] = defaultdict(int)
    fn: dict[str, int] = defaultdict(int)
    wrong: list[str] = []
    files = scored = 0
    for (repo, commit), group in sorted(by_repo.items()):
        paths = sorted({lb.path for lb in group})
        with tempfile.TemporaryDirectory() as tmp:
            why = materialise(git_dir(args.mirror, repo), commit, paths, Path(tmp), not args.files_only)
            if why:
                print(f"skipped {repo}: {why}")
                continue
            root = Path(tmp).resolve()
            found = {(relative(f.file, root), f.line, f.rule) for f in lint_paths([root / p for p in paths])}
        files += len(paths)
        scored += len(group)
        want = {(lb.path, lb.line, lb.rule) for lb in group if lb.expect}
        file_rule = {(lb.path, lb.rule) for lb in group if lb.expect and lb.rule in FILE_LEVEL}
        matched: set[tuple[str, int, str]] = set()
        for path, line, rule in sorted(found):
            if (path, line, rule) in want:
                matched.add((path, line, rule))
            elif rule in FILE_LEVEL and (path, rule) in file_rule:
                matched |= {w for w in want if w[0] == path and w[2] == rule}
            else:
                fp[rule] += 1
                wrong.append(f"{repo} {path}:{line}: false alarm {rule} {RULES[rule].name}")
        for path, line, rule in sorted(want):
            if (path, line, rule) in matched:
                tp[rule] += 1
            else:
                fn[rule] += 1
                wrong.append(f"{repo} {path}:{line}: missed {rule} {RULES[rule].name}")

    if not files:
        print("no labelled file could be read: fetch the repositories named in the labels first")
        return 0
    print(f"{files} files of {len(by_repo)} repositories, {scored} labelled lines")
    print(f"{'rule':<6} {'name':<26} {'TP':>4} {'FP':>4} {'FN':>4} {'precision':>10} {'recall':>8}")
    for rule in sorted(set(tp) | set(fp) | set(fn)):
        print(
            f"{rule:<6} {RULES[rule].name:<26} {tp[rule]:>4} {fp[rule]:>4} {fn[rule]:>4} "
            f"{ratio(tp[rule], fp[rule]):>10.0%} {ratio(tp[rule], fn[rule]):>8.0%}"
        )
    t, f, n = sum(tp.values()), sum(fp.values()), sum(fn.values())
    print(f"{'all':<33} {t:>4} {f:>4} {n:>4} {ratio(t, f):>10.0%} {ratio(t, n):>8.0%}")
    for w in wrong:
        print("  " + w)
    return 0


def relative(file: str, root: Path) -> str:
    return Path(file).resolve().relative_to(root).as_posix()


def ratio(good: int, bad: int) -> float:
    return good / (good + bad) if good + bad else 1.0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
