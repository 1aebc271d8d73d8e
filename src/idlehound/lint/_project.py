"""Facts shared between the files linted together that import one another (one hop; packages pass through).

A helper module (`train_utils.py`) runs on the GPU of the script that imports it, after that script's pinned
loader; a model file's convolutions run under that script's cudnn settings.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Optional, Union

from ._facts import Facts


def _module_paths(name: str, roots: list[Path]) -> list[Path]:
    parts = name.split(".") if name else []
    out = []
    for root in roots:
        base = root.joinpath(*parts) if parts else root
        out += [base.with_name(base.name + ".py") if parts else base / "__init__.py", base / "__init__.py"]
    return out


def _roots(here: Path, level: int) -> list[Path]:
    """Folders an import is looked up in: relative imports from the package; absolute ones beside the file and in
    its two parent folders (where scripts are usually run from)."""
    if not level:
        return [here, here.parent, here.parent.parent]
    for _ in range(level - 1):
        here = here.parent
    return [here]


def _imports(
    tree: ast.Module, here: Path
) -> Iterator[tuple[str, list[str], list[Path], Union[ast.Import, ast.ImportFrom]]]:
    """(module, imported names, lookup folders, node) for every import statement."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                yield a.name, [], _roots(here, 0), n
        elif isinstance(n, ast.ImportFrom):
            yield n.module or "", [a.name for a in n.names], _roots(here, n.level), n


def imported_files(path: Path, tree: ast.Module, known: set[Path]) -> set[Path]:
    """Files among `known` that this file imports: `import a.b`, `from a import b`, `from .b import c`."""
    out: set[Path] = set()
    for module, names, roots, _ in _imports(tree, path.parent):
        for name in [module] + [f"{module}.{a}" if module else a for a in names]:
            out |= {p for p in _module_paths(name, roots) if p in known}
    out.discard(path)
    return out


def _top_level(tree: ast.Module) -> dict[str, ast.AST]:
    """A module's functions and classes, and its registries: `DiT_models = {"DiT-XL/2": DiT_XL_2, ...}`."""
    out: dict[str, ast.AST] = {
        n.targets[0].id: n.value
        for n in tree.body
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and isinstance(n.targets[0], ast.Name)
        and isinstance(n.value, ast.Dict)
    }
    out.update(
        {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    )
    return out


def imported_defs(
    path: Path, tree: ast.Module, trees: dict[Path, ast.Module]
) -> tuple[dict[str, ast.AST], dict[str, dict[str, ast.AST]]]:
    """Functions and classes this file imports from files linted with it (`from steps import train_step`), and
    modules it imports whole (`import steps as s` -> s.train_step)."""
    names: dict[str, ast.AST] = {}
    modules: dict[str, dict[str, ast.AST]] = {}
    for module, _names, roots, node in _imports(tree, path.parent):
        files = [p for p in _module_paths(module, roots) if p in trees and p != path]
        if isinstance(node, ast.Import):
            alias = next((a.asname or a.name for a in node.names if a.name == module), module)
            if files and "." not in alias:
                modules[alias] = _top_level(trees[files[0]])
            continue
        for a in node.names:
            if a.name == "*":  # `from models import *`: every top-level definition of the first file found
                for k, d in (_top_level(trees[files[0]]) if files else {}).items():
                    names.setdefault(k, d)
                continue
            found = next(
                (_top_level(trees[f]).get(a.name) for f in files if a.name in _top_level(trees[f])), None
            )
            if found is not None:
                names[a.asname or a.name] = found
                continue
            # `from utils import array_tool as at`: a module imported by name, used as `at.tonumpy(x)`
            sub = [p for p in _module_paths(f"{module}.{a.name}" if module else a.name, roots) if p in trees]
            if sub and sub[0] != path:
                modules[a.asname or a.name] = _top_level(trees[sub[0]])
    return names, modules


def shared_facts(trees: dict[Path, ast.Module], facts: dict[Path, Facts]) -> dict[Path, Optional[Facts]]:
    """For each file, the facts of the files it imports and of those importing it (through package __init__s)."""
    known = set(trees)
    imports = {p: imported_files(p, t, known) for p, t in trees.items()}
    for _ in range(3):  # a package's __init__ passes its own imports on
        for p in imports:
            imports[p] |= {q for i in list(imports[p]) if i.name == "__init__.py" for q in imports[i]} - {p}
    out: dict[Path, Optional[Facts]] = {}
    covered = _imported_by_benchmark(imports, facts)
    for p in trees:
        near = imports[p] | {q for q in trees if p in imports[q]}
        merged: Optional[Facts] = None
        for q in near:
            merged = facts[q] if merged is None else merged | facts[q]
        if merged is not None and not merged.benchmark and p in covered:
            merged = merged | Facts(False, False, True)
        out[p] = merged
    return out


def _imported_by_benchmark(imports: dict[Path, set[Path]], facts: dict[Path, Facts]) -> set[Path]:
    """cudnn.benchmark is one switch for the process: the modules a script that sets it imports, however deep
    (main.py -> solver.py -> model.py), run with it set. Only from a script no file read imports (where a
    program starts): a utility module that sets it on one path (yolov5's `LoadStreams`, for webcam inference)
    does not set it for every module its importers use."""
    return reach(imports, [p for p in entries(imports) if facts[p].benchmark])


def importers(p: Path, imports: dict[Path, set[Path]]) -> set[Path]:
    """The files that import p, directly or through others (`imports`: file -> the files it imports)."""
    by: dict[Path, set[Path]] = {}
    for q, imported in imports.items():
        for i in imported:
            by.setdefault(i, set()).add(q)
    return reach(by, [p]) - {p}


def entries(imports: dict[Path, set[Path]]) -> list[Path]:
    """The files no file read imports: where a program starts."""
    imported = set().union(*imports.values()) if imports else set()
    return [p for p in imports if p not in imported]


def reach(graph: dict[Path, set[Path]], starts: list[Path]) -> set[Path]:
    """The starts and every file the graph leads to from them, however deep."""
    seen, todo = set(starts), list(starts)
    while todo:
        for q in graph.get(todo.pop(), set()) - seen:
            seen.add(q)
            todo.append(q)
    return seen


Imports = tuple[dict[str, ast.AST], dict[str, dict[str, ast.AST]]]


def imports_table(trees: dict[Path, ast.Module]) -> Callable[[Path], Imports]:
    """imported_defs of each file read in one lint run, worked out once: the checkers, the view's convolution
    search and the subclass table all ask for the same files."""
    memo: dict[Path, Imports] = {}

    def of(path: Path) -> Imports:
        if path not in memo:
            memo[path] = imported_defs(path, trees[path], trees)
        return memo[path]

    return of


def subclass_methods(
    trees: dict[Path, ast.Module], imports: Callable[[Path], Imports]
) -> dict[int, dict[str, list[ast.AST]]]:
    """Methods of subclasses defined in other files, by the base class they override (`class
    ImageSoftmaxEngine(Engine)` in softmax.py, `Engine` imported from engine.py): a base's `self.forward_backward(
    data)` runs the override. Keyed by the id of the base's ClassDef."""
    out: dict[int, dict[str, list[ast.AST]]] = {}
    for path, tree in trees.items():
        subclasses = [c for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and c.bases]
        if not subclasses:
            continue
        names, modules = imports(path)
        for c in subclasses:
            for b in c.bases:
                base = names.get(b.id) if isinstance(b, ast.Name) else None
                if isinstance(b, ast.Attribute) and isinstance(b.value, ast.Name) and b.value.id in modules:
                    base = modules[b.value.id].get(b.attr)  # `class E(engine.Engine)`
                if not isinstance(base, ast.ClassDef):
                    continue
                methods = out.setdefault(id(base), {})
                for m in c.body:
                    if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        methods.setdefault(m.name, []).append(m)
    return out
