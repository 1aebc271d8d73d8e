"""How often two people labelling the same candidate lines agree: the ceiling a lint score can be read against.

    python benchmarks/lint_agreement.py FIRST.tsv SECOND.tsv

Both files are label TSVs (benchmarks/lint_heldout_*.tsv's format). Rows are matched by (repo, path, line, rule);
only rows both files label count. Printed: agreement, Cohen's kappa, and the second labeller scored as if it were
a tool against the first (precision and recall of its `true` labels), per rule and overall.
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from pathlib import Path

Key = tuple[str, str, int, str]


def read(path: Path) -> dict[Key, bool]:
    out: dict[Key, bool] = {}
    with path.open(newline="") as f:
        for row in csv.reader(f, delimiter="\t"):
            if len(row) < 6 or row[0].startswith("#") or row[5] not in ("true", "false"):
                continue
            out[(row[0], row[2], int(row[3]), row[4])] = row[5] == "true"
    return out


def kappa(pairs: list[tuple[bool, bool]]) -> float:
    n = len(pairs)
    seen = sum(a == b for a, b in pairs) / n
    p1, p2 = sum(a for a, _ in pairs) / n, sum(b for _, b in pairs) / n
    chance = p1 * p2 + (1 - p1) * (1 - p2)
    return (seen - chance) / (1 - chance) if chance < 1 else 1.0


def ratio(good: int, bad: int) -> float:
    return good / (good + bad) if good + bad else 1.0


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    first, second = read(Path(argv[0])), read(Path(argv[1]))
    both = sorted(first.keys() & second.keys())
    if not both:
        print("no row is labelled in both files")
        return 1
    by_rule: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for k in both:
        by_rule[k[3]].append((first[k], second[k]))
    pairs = [p for ps in by_rule.values() for p in ps]
    print(f"{len(both)} lines labelled in both ({len(first)} in the first, {len(second)} in the second)")
    print(
        f"{'rule':<6} {'lines':>5} {'agree':>6} {'both true':>9} {'1st only':>8} {'2nd only':>8} {'P(2nd)':>7} {'R(2nd)':>7}"
    )
    for rule, ps in sorted(by_rule.items()) + [("all", pairs)]:
        tt = sum(a and b for a, b in ps)
        only1 = sum(a and not b for a, b in ps)
        only2 = sum(b and not a for a, b in ps)
        agree = sum(a == b for a, b in ps) / len(ps)
        print(
            f"{rule:<6} {len(ps):>5} {agree:>6.0%} {tt:>9} {only1:>8} {only2:>8} "
            f"{ratio(tt, only2):>7.0%} {ratio(tt, only1):>7.0%}"
        )
    print(f"Cohen's kappa (all lines): {kappa(pairs):.2f}")
    for k in both:
        if first[k] != second[k]:
            print(f"  {k[0]} {k[1]}:{k[2]} {k[3]}: first {first[k]}, second {second[k]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
