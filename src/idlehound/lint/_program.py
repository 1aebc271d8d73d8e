"""The GPU is one fact of a program: a loader module (`data_loader.py` with a `get_loader(...)` and no device code
of its own) built into a script whose program trains on the GPU (`main.py` -> `solver.py` with `.cuda()`) feeds
that GPU. A program is an entry script (a file no file read imports) and everything it imports, however deep.
Only the loader rules (IH010, IH011) use it: a loader's settings are the program's, where its other rules need the
file's own evidence."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from ._cpudefault import cpu_by_default
from ._facts import Facts
from ._project import entries, imported_files, reach

if TYPE_CHECKING:
    from ._rules import Checker


def programs(trees: dict[Path, ast.Module]) -> list[set[Path]]:
    """Each entry script (a file no file read imports) with everything it imports, however deep."""
    known = set(trees)
    imports = {p: imported_files(p, t, known) for p, t in trees.items()}
    return [reach(imports, [entry]) for entry in entries(imports)]


def gpu_programs(trees: dict[Path, ast.Module], facts: dict[Path, Facts]) -> dict[Path, set[Path]]:
    """Each file of a program some file of which shows GPU use (and none runs on the CPU by default), with the
    other files of those programs."""
    out: dict[Path, set[Path]] = {}
    for program in programs(trees):
        if any(facts[q].gpu for q in program) and not any(cpu_by_default(trees[q]) for q in program):
            for q in program:
                out.setdefault(q, set()).update(program - {q})
    return out


def program_loaders(c: Checker, others: list[ast.Module]) -> None:
    """IH010 / IH011 for the training loaders of a file with no GPU use of its own (or from the files beside it),
    on a program that uses the GPU, as the checker's run reports them in a GPU file: those built at import or by
    a function or class another file of the program names (`get_loader(...)` in main.py); a utility nobody else
    calls (robustness's `TransformedLoader`) is not the program's training path."""
    if c.gpu:
        return
    used = {n.id for t in others for n in ast.walk(t) if isinstance(n, ast.Name)}
    used |= {n.attr for t in others for n in ast.walk(t) if isinstance(n, ast.Attribute)}
    used |= {a.name for t in others for n in ast.walk(t) if isinstance(n, ast.ImportFrom) for a in n.names}
    for ld in c.loaders:
        builder = _builder(c.tree, ld.call)
        if ld.evaluation or ld.on_device or builder is not None and builder not in used:
            continue
        if ld.no_workers():
            c.add("IH010", ld.call)
        if ld.unpinned() and not ld.prepared:
            c.add("IH011", ld.call)


def _builder(tree: ast.Module, call: ast.Call) -> Optional[str]:
    """The name of the top-level function or class that holds the call; None at module level."""
    for d in tree.body:
        if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and any(
            n is call for n in ast.walk(d)
        ):
            return d.name
    return None
