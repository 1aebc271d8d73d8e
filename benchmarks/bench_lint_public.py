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

A finding on a line the set does not label at all is a false alarm in the first table; `--unjudged OUT.tsv` writes
those lines (expect left empty) for someone who did not write lint to label by the same guide. Their labels go in
`LABELS.adjudicated.tsv` beside the set; when that file exists a second table scores the set with them (the
first table, as labelled, stays the registered figure).

`LABELS.convention.tsv` beside a set holds labels changed later so that every set follows one convention (code
reached only under an option off by default, which the documented command does not turn on, is `false`: see
docs/lint.md). Each row names a label of the set or of its adjudicated file, with the new expect; when that file
exists (or with `--convention`) a third table scores the set with the adjudicated labels and these changes, and
counts IH015 once per repository (cudnn.benchmark is one switch per process; the sets place its label on the
script, the model's module or both). The registered labels are never edited.
"""

from __future__ import annotations

import argparse
import ast
import csv
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

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
    """The snapshot's git directory: `repo` itself (bare), or `repo/.git` where fetch left a clone."""
    gd = mirror / repo.replace("/", "+") / "repo"
    return gd / ".git" if (gd / ".git").is_dir() else gd


def checkout_docs(gd: Path, commit: str, into: Path) -> None:
    """The commit's docs and shell scripts (a switch a documented command passes is on: lint/_offflags.py);
    one archive per kind, as `git archive` fails on a pattern that matches nothing."""
    for x in ("md", "rst", "sh"):
        archive = subprocess.run(
            ["git", "--git-dir", str(gd), "archive", commit, "--", f":(glob)**/*.{x}"],
            capture_output=True,
            check=False,
        )
        if archive.returncode == 0:
            subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=False)


def materialise(gd: Path, commit: str, paths: list[str], into: Path, checkout: bool = True) -> str:
    """Write each path as it is at commit under `into` (and, with `checkout`, every .py file of the commit, for
    lint's project view, and its .md/.rst/.sh files); '' when done, else why not."""
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
        checkout_docs(gd, commit, into)
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


Key = tuple[str, int, str]  # (path, line, rule)


@dataclass
class Tally:
    tp: dict[str, int]
    fp: dict[str, int]
    fn: dict[str, int]
    wrong: list[str]

    @classmethod
    def empty(cls) -> Tally:
        return cls(defaultdict(int), defaultdict(int), defaultdict(int), [])


Starts = dict[str, dict[int, int]]  # path -> line -> the first line of the statement it is part of


def statement_starts(source: bytes) -> dict[int, int]:
    """Each line of a multi-line simple statement (or of a compound statement's header) -> its first line."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    starts: dict[int, int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        body = getattr(node, "body", None)
        last = body[0].lineno - 1 if isinstance(body, list) and body else node.end_lineno or node.lineno
        for line in range(node.lineno, max(last, node.lineno) + 1):
            starts[line] = node.lineno
    return starts


def lint_group(
    mirror: Path, repo: str, commit: str, paths: list[str], files_only: bool
) -> Optional[tuple[set[Key], Starts]]:
    """What lint reports on the labelled files of one repository at one commit, and their statements' lines
    (None: not readable here)."""
    with tempfile.TemporaryDirectory() as tmp:
        why = materialise(git_dir(mirror, repo), commit, paths, Path(tmp), not files_only)
        if why:
            print(f"skipped {repo}: {why}")
            return None
        root = Path(tmp).resolve()
        texts = {p: (root / p).read_bytes() for p in paths}  # as Python reads them: a BOM, a coding line
        for p in [p for p, text in texts.items() if not parses(text)]:
            print(f"skipped {repo} {p}: not valid Python 3 (its labels are not scored)")
            del texts[p]
        starts = {p: statement_starts(text) for p, text in texts.items()}
        found = {(relative(f.file, root), f.line, f.rule) for f in lint_paths([root / p for p in texts])}
        return found, starts


def parses(text: bytes) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def statement_of(starts: Starts, key: Key) -> Key:
    """The finding or label as the statement it is in: lint names a statement by its first line, a labeller
    may name the line of the call inside it."""
    path, line, rule = key
    return path, starts.get(path, {}).get(line, line), rule


def judged(group: list[Label], key: Key, starts: Starts) -> bool:
    """Whether a label says anything of this finding (IH015 is a fact of the file: any IH015 label of it)."""
    path, line, rule = key
    if rule in FILE_LEVEL:
        return any(lb.path == path and lb.rule == rule for lb in group)
    here = statement_of(starts, key)
    return any(statement_of(starts, (lb.path, lb.line, lb.rule)) == here for lb in group)


def tally(t: Tally, repo: str, group: list[Label], found: set[Key], starts: Starts) -> None:
    want = {(lb.path, lb.line, lb.rule) for lb in group if lb.expect}
    by_statement = {statement_of(starts, w): w for w in sorted(want, reverse=True)}  # the first line wins
    file_rule = {(lb.path, lb.rule) for lb in group if lb.expect and lb.rule in FILE_LEVEL}
    matched: set[Key] = set()
    for path, line, rule in sorted(found):
        same = by_statement.get(statement_of(starts, (path, line, rule)))
        if (path, line, rule) in want:
            matched.add((path, line, rule))
        elif same is not None and same not in matched and same not in found:
            matched.add(same)  # the labelled line is another line of the statement lint names
        elif rule in FILE_LEVEL and (path, rule) in file_rule:
            matched |= {w for w in want if w[0] == path and w[2] == rule}
        else:
            t.fp[rule] += 1
            how = (
                "false alarm"
                if judged(group, (path, line, rule), starts)
                else "false alarm (line not labelled)"
            )
            t.wrong.append(f"{repo} {path}:{line}: {how} {rule} {RULES[rule].name}")
    for path, line, rule in sorted(want):
        if (path, line, rule) in matched:
            t.tp[rule] += 1
        else:
            t.fn[rule] += 1
            t.wrong.append(f"{repo} {path}:{line}: missed {rule} {RULES[rule].name}")


def tally_once_per_repository(
    t: Tally, repo: str, group: list[Label], found: set[Key], starts: Starts
) -> None:
    """As `tally`, with IH015 counted once for the repository: cudnn.benchmark is one switch per process, so a
    finding in any of its files answers a `true` label in any of them (the sets place that label differently:
    the script, the model's module, or both)."""
    tally(
        t,
        repo,
        [lb for lb in group if lb.rule not in FILE_LEVEL],
        {f for f in found if f[2] not in FILE_LEVEL},
        starts,
    )
    for rule in sorted(FILE_LEVEL):
        want = any(lb.expect and lb.rule == rule for lb in group)
        where = sorted(f"{p}:{n}" for p, n, r in found if r == rule)
        if want and where:
            t.tp[rule] += 1
        elif want:
            t.fn[rule] += 1
            t.wrong.append(f"{repo}: missed {rule} {RULES[rule].name} (once per repository)")
        elif where:
            t.fp[rule] += 1
            t.wrong.append(f"{repo} {where[0]}: false alarm {rule} {RULES[rule].name} (once per repository)")


def print_tally(t: Tally, title: str) -> None:
    print(title)
    print(f"{'rule':<6} {'name':<26} {'TP':>4} {'FP':>4} {'FN':>4} {'precision':>10} {'recall':>8}")
    for rule in sorted(set(t.tp) | set(t.fp) | set(t.fn)):
        tp, fp, fn = t.tp[rule], t.fp[rule], t.fn[rule]
        print(
            f"{rule:<6} {RULES[rule].name:<26} {tp:>4} {fp:>4} {fn:>4} {ratio(tp, fp):>10.0%} {ratio(tp, fn):>8.0%}"
        )
    a, b, c = sum(t.tp.values()), sum(t.fp.values()), sum(t.fn.values())
    print(f"{'all':<33} {a:>4} {b:>4} {c:>4} {ratio(a, b):>10.0%} {ratio(a, c):>8.0%}")
    for w in t.wrong:
        print("  " + w)


def unjudged_rows(
    mirror: Path, repo: str, commit: str, group: list[Label], found: set[Key], starts: Starts
) -> list[str]:
    """A row to label for each finding no label speaks of: the expect column left empty, the line's text as note."""
    rows = []
    for path, line, rule in sorted(found):
        if judged(group, (path, line, rule), starts):
            continue
        shown = subprocess.run(
            ["git", "--git-dir", str(git_dir(mirror, repo)), "show", f"{commit}:{path}"],
            capture_output=True,
            text=True,
            check=False,
        )
        lines = shown.stdout.splitlines()
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        rows.append("\t".join([repo, commit, path, str(line), rule, "", text]))
    return rows


def adjudication_file(labels_file: Path) -> Path:
    """Labels given later to lines a scoring flagged that the set had not labelled (beside the set)."""
    return labels_file.with_name(labels_file.stem + ".adjudicated.tsv")


def convention_file(labels_file: Path) -> Path:
    """Labels changed so that all sets follow one convention (beside the set)."""
    return labels_file.with_name(labels_file.stem + ".convention.tsv")


def with_convention(labels: list[Label], changes: list[Label], source: Path) -> list[Label]:
    """The labels with each change applied; a change that names no label is an error in the change file."""
    new = {(c.repo, c.path, c.line, c.rule): c for c in changes}
    known = {(lb.repo, lb.path, lb.line, lb.rule) for lb in labels}
    stray = sorted(set(new) - known)
    if stray:
        raise SystemExit(f"{source}: changes lines no label names: {stray[:3]}")
    return [new.get((lb.repo, lb.path, lb.line, lb.rule), lb) for lb in labels]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, default=Path(os.environ.get("IDLEHOUND_MIRROR", "/work/.mirror")))
    ap.add_argument("labels_file", nargs="?", type=Path, help="label TSV (default: lint_public_labels.tsv)")
    ap.add_argument("--labels", type=Path, default=LABELS)
    ap.add_argument(
        "--files-only", action="store_true", help="write only the labelled files, not the checkout"
    )
    ap.add_argument(
        "--convention",
        action="store_true",
        help="print the one-convention table even where the set has no .convention.tsv",
    )
    ap.add_argument(
        "--unjudged", type=Path, help="write a row to label for each finding on a line the labels do not name"
    )
    args = ap.parse_args(argv)

    labels_file = args.labels_file or args.labels
    labels = read_labels(labels_file)
    extra_file = adjudication_file(labels_file)
    extra = read_labels(extra_file) if extra_file.exists() else []
    clash = {(lb.repo, lb.path, lb.line, lb.rule) for lb in labels} & {
        (lb.repo, lb.path, lb.line, lb.rule) for lb in extra
    }
    if clash:
        raise SystemExit(f"{extra_file}: relabels lines the set labels already: {sorted(clash)[:3]}")
    by_repo: dict[tuple[str, str], list[Label]] = defaultdict(list)
    for lb in labels:
        by_repo[(lb.repo, lb.commit)].append(lb)
    more: dict[tuple[str, str], list[Label]] = defaultdict(list)
    for lb in extra:
        more[(lb.repo, lb.commit)].append(lb)
    conv_file = convention_file(labels_file)
    changes = read_labels(conv_file) if conv_file.exists() else []
    agreed = with_convention(labels + extra, changes, conv_file)
    one_way: dict[tuple[str, str], list[Label]] = defaultdict(list)
    for lb in agreed:
        one_way[(lb.repo, lb.commit)].append(lb)

    strict, adjudicated, convention = Tally.empty(), Tally.empty(), Tally.empty()
    todo: list[str] = []
    files = scored = 0
    for (repo, commit), group in sorted(by_repo.items()):
        paths = sorted({lb.path for lb in group})
        linted = lint_group(args.mirror, repo, commit, paths, args.files_only)
        if linted is None:
            continue
        found, starts = linted
        group = [lb for lb in group if lb.path in starts]  # the files that could be linted
        files += len(starts)
        scored += len(group)
        tally(strict, repo, group, found, starts)
        extra_here = [lb for lb in more[(repo, commit)] if lb.path in starts]
        tally(adjudicated, repo, group + extra_here, found, starts)
        agreed_here = [lb for lb in one_way[(repo, commit)] if lb.path in starts]
        tally_once_per_repository(convention, repo, agreed_here, found, starts)
        todo += unjudged_rows(args.mirror, repo, commit, group + extra_here, found, starts)

    if not files:
        print("no labelled file could be read: fetch the repositories named in the labels first")
        return 0
    print(f"{files} files of {len(by_repo)} repositories, {scored} labelled lines")
    print_tally(strict, "As labelled (a finding on a line the set does not label counts as a false alarm):")
    if extra:
        print()
        print_tally(adjudicated, f"With the {len(extra)} adjudicated labels of {extra_file.name}:")
    if changes or args.convention:
        print()
        print_tally(
            convention,
            f"With the adjudicated labels and the {len(changes)} changes of {conv_file.name}, IH015 counted once"
            " per repository (one convention for all sets):",
        )
    if args.unjudged:
        args.unjudged.write_text("".join(r + "\n" for r in todo))
        print(f"{len(todo)} finding(s) on lines no label names: {args.unjudged}")
    return 0


def relative(file: str, root: Path) -> str:
    return Path(file).resolve().relative_to(root).as_posix()


def ratio(good: int, bad: int) -> float:
    return good / (good + bad) if good + bad else 1.0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
