"""Precision and recall of lint over files labelled on their lines: `# expect: item-in-loop` or `# expect: none`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ._catalog import RULES
from ._source import read_source

_LABEL = re.compile(r"#\s*expect:\s*([\w\-, ]+)")
_BY_NAME = {r.name: r.id for r in RULES.values()}


@dataclass
class Score:
    tp: dict[str, int] = field(default_factory=dict)
    fp: dict[str, int] = field(default_factory=dict)
    fn: dict[str, int] = field(default_factory=dict)
    wrong: list[str] = field(default_factory=list)  # "file:line: false IH001" / "file:line: missed IH001"
    cases: int = 0

    def count(self, table: dict[str, int], rule: str) -> None:
        table[rule] = table.get(rule, 0) + 1

    def rule_ids(self) -> list[str]:
        return sorted(set(self.tp) | set(self.fp) | set(self.fn))

    @staticmethod
    def ratio(a: int, b: int) -> float:
        return a / b if b else 1.0

    def precision(self, rule: str = "") -> float:
        tp = self.tp.get(rule, 0) if rule else sum(self.tp.values())
        fp = self.fp.get(rule, 0) if rule else sum(self.fp.values())
        return self.ratio(tp, tp + fp)

    def recall(self, rule: str = "") -> float:
        tp = self.tp.get(rule, 0) if rule else sum(self.tp.values())
        fn = self.fn.get(rule, 0) if rule else sum(self.fn.values())
        return self.ratio(tp, tp + fn)


def labels(path: Path) -> dict[int, set[str]]:
    """Line -> expected rule ids (empty set for `none`). Names and ids are both accepted."""
    out: dict[int, set[str]] = {}
    for n, line in enumerate(read_source(path).splitlines(), 1):
        m = _LABEL.search(line)
        if m:
            words = {w.strip() for w in m.group(1).split(",") if w.strip()} - {"none"}
            unknown = words - set(_BY_NAME) - set(RULES)
            if unknown:
                raise ValueError(f"{path}:{n}: unknown rule(s) {', '.join(sorted(unknown))}")
            out[n] = {_BY_NAME.get(w, w) for w in words}
    return out


def score_files(paths: list[Path]) -> Score:
    """Every finding on a line not labelled with its rule is a false alarm; every label not found is a miss."""
    from . import lint_paths

    s = Score()
    for path in paths:
        want = labels(path)
        s.cases += len(want)
        got = {(f.line, f.rule) for f in lint_paths([path])}
        for line, rule in sorted(got):
            if rule in want.get(line, set()):
                s.count(s.tp, rule)
            else:
                s.count(s.fp, rule)
                s.wrong.append(f"{path.name}:{line}: false {rule} {RULES[rule].name}")
        for line, rules in sorted(want.items()):
            for rule in sorted(rules - {r for ln, r in got if ln == line}):
                s.count(s.fn, rule)
                s.wrong.append(f"{path.name}:{line}: missed {rule} {RULES[rule].name}")
    return s
