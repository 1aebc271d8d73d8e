"""What one lint run adds to each file's `Functions` beyond its own imports (written for sets I and J): options
declared with default 0 or 1, and classes a package re-exports."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ._model import Functions
from ._options import off_options
from ._project import Imports
from ._reexport import add_reexported


@dataclass(frozen=True)
class RunFacts:
    options: frozenset[str]  # command-line options declared with default 0
    ones: frozenset[str]  # command-line options declared with default 1


def run_facts(files: dict[Path, ast.Module], trees: dict[Path, ast.Module], project: bool) -> RunFacts:
    zero, one = off_options(files, trees, search=project)
    return RunFacts(zero, one)


def enrich(
    funcs: Functions,
    path: Path,
    tree: ast.Module,
    trees: dict[Path, ast.Module],
    imports: Callable[[Path], Imports],
    run: RunFacts,
) -> None:
    funcs.off_options, funcs.one_options = run.options, run.ones
    add_reexported(funcs, path, tree, trees, imports)  # `from pkg import Trainer` via pkg/__init__.py
