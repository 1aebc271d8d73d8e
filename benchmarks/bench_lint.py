"""Precision and recall of `idlehound lint` per rule on the labelled corpus (tests/scripts/lint/corpus/).

    PYTHONPATH=src python benchmarks/bench_lint.py [FOLDER_OR_FILES ...]

Each `# expect: <rule>[, <rule>]` / `# expect: none` comment labels its line. Prints a table and every false alarm
and miss; also prints how long the lint took per file (a figure, not a target).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from idlehound.lint import RULES
from idlehound.lint._score import score_files

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "scripts" / "lint" / "corpus"


def main(args: list[str]) -> None:
    roots = [Path(a) for a in args] or [CORPUS]
    files = [f for r in roots for f in (sorted(r.glob("*.py")) if r.is_dir() else [r])]
    t0 = time.perf_counter()
    s = score_files(files)
    took = time.perf_counter() - t0
    print(f"{len(files)} files, {s.cases} labelled lines")
    print(f"{'rule':<6} {'name':<26} {'TP':>4} {'FP':>4} {'FN':>4} {'precision':>10} {'recall':>8}")
    for rule in s.rule_ids():
        print(
            f"{rule:<6} {RULES[rule].name:<26} {s.tp.get(rule, 0):>4} {s.fp.get(rule, 0):>4} "
            f"{s.fn.get(rule, 0):>4} {s.precision(rule):>10.0%} {s.recall(rule):>8.0%}"
        )
    tp, fp, fn = (sum(t.values()) for t in (s.tp, s.fp, s.fn))
    print(f"{'all':<33} {tp:>4} {fp:>4} {fn:>4} {s.precision():>10.0%} {s.recall():>8.0%}")
    for w in s.wrong:
        print("  " + w)
    print(f"lint time: {took * 1000 / max(len(files), 1):.1f} ms per file")


if __name__ == "__main__":
    main(sys.argv[1:])
