"""`idlehound lint`: a static check of training code for lines that make the GPU wait."""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any, Optional, Union

from ..errors import IdlehoundError
from ._catalog import RULES, LintFinding
from ._facts import file_facts
from ._model import Functions
from ._output import FORMATS, annotation, render, sarif_log, summary
from ._project import imported_defs, shared_facts
from ._rules import Checker, check_tree
from ._source import parse_source, python_files, read_source


def lint_paths(paths: list[Union[str, Path]]) -> list[LintFinding]:
    """Lint .py files (folders are searched recursively). Files linted together that import one another share
    what they show (GPU use, a pinned loader, cudnn.benchmark) and the helpers a training loop calls. Raises
    IdlehoundError on unreadable or invalid files, FIFOs and devices (never opened), files over the size bound,
    and nesting Python itself cannot parse."""
    files: dict[Path, tuple[str, str, ast.Module]] = {}  # absolute path -> (name as given, source, tree)
    for p in map(Path, paths):
        if not p.exists():
            raise IdlehoundError(f"{p}: no such file or folder")
        for f in python_files(p) if p.is_dir() else [p]:
            source = read_source(f)
            files.setdefault(Path(os.path.abspath(f)), (str(f), source, parse_source(source, str(f))))
    trees = {k: tree for k, (_, _, tree) in files.items()}
    facts = {k: file_facts(tree, name) for k, (name, _, tree) in files.items()}
    shared = shared_facts(trees, facts)
    checkers: dict[Path, Checker] = {}
    for k, (name, source, tree) in files.items():
        funcs = Functions(tree, *imported_defs(k, tree, trees))
        checkers[k] = check_tree(tree, source, name, shared[k], facts[k], funcs)
    _check_foreign_helpers(checkers)
    return [f for c in checkers.values() for f in c.findings()]


def _check_foreign_helpers(checkers: dict[Path, Checker]) -> None:
    """A helper imported from another linted file and called every step is checked there, as per-step code."""
    owner = {
        id(n): k
        for k, c in checkers.items()
        for n in ast.walk(c.tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    for _ in range(3):  # bounded: helpers calling helpers across files
        moved = set()
        for c in checkers.values():
            for f, level in c.foreign:
                if id(f) in owner:
                    checkers[owner[id(f)]].pending.append((f, level))
                    moved.add(owner[id(f)])
            c.foreign = []
        if not moved:
            return
        for k in moved:
            checkers[k].drain()


def join_costs(found: list[LintFinding], doc: dict[str, Any]) -> dict[tuple[str, int], float]:
    """Measured GPU idle (ms per step) at each finding's line, from an analysis report document."""
    per_line: dict[tuple[str, int], float] = {}
    rows = [(r["location"], r["idle_ms_per_step"]) for r in doc.get("idle_by_line", [])]
    rows += [(s["location"], s["idle_after_ms_per_step"]) for s in doc.get("sync_points", [])]
    for loc, ms in rows:
        if loc and loc.get("exact"):
            key = (Path(loc["file"]).name, loc["line"])
            per_line[key] = max(per_line.get(key, 0.0), ms)
    return {
        (f.file, f.line): per_line[(Path(f.file).name, f.line)]
        for f in found
        if (Path(f.file).name, f.line) in per_line
    }


def measured_doc(trace: Optional[Path]) -> Optional[dict[str, Any]]:
    if trace is None:
        return None
    from ..pipeline import analyze_path

    return analyze_path(trace).doc


__all__ = [
    "FORMATS",
    "RULES",
    "LintFinding",
    "annotation",
    "join_costs",
    "lint_paths",
    "measured_doc",
    "render",
    "sarif_log",
    "summary",
]
