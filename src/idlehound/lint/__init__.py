"""`idlehound lint`: a static check of training code for lines that make the GPU wait."""

from __future__ import annotations

import ast
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional, Union

from ..errors import IdlehoundError
from ._atdefault import calls_off_by_default, option_defaults
from ._catalog import RULES, LintFinding
from ._facts import Facts, _loaders, file_facts
from ._model import Functions
from ._offflags import flag_defaults
from ._options import off_options
from ._output import FORMATS, annotation, render, sarif_log, summary
from ._placement import one_switch
from ._program import gpu_programs, program_loaders
from ._project import imports_table, shared_facts, subclass_methods
from ._reexport import add_reexported
from ._rules import Checker, Via, check_tree
from ._source import parse_source, python_files, read_source
from ._syntax import dotted
from ._view import ConvDefs, context_files, kwargs_pinned, mentioning, model_build, project_root


def lint_paths(paths: list[Union[str, Path]], project: bool = True) -> list[LintFinding]:
    """Lint .py files (folders are searched recursively). Files linted together that import one another share
    what they show (GPU use, a pinned loader, cudnn.benchmark) and the helpers a training loop calls; with
    `project`, so do the project modules they import (read for the project view, never reported on themselves:
    see _view.py). Raises IdlehoundError on unreadable or invalid files, FIFOs and devices (never opened), files
    over the size bound, and nesting Python itself cannot parse."""
    files = _read_paths(paths)
    linted = {k: tree for k, (_, _, tree) in files.items()}
    context = context_files(linted) if project else {}
    everything = {**files, **context}
    trees = {k: tree for k, (_, _, tree) in everything.items()}
    facts = {k: file_facts(tree, name) for k, (name, _, tree) in everything.items()}
    if project:
        _pinned_by_callers(files, trees, facts)
    _pinned_by_attribute(trees, facts)
    shared = shared_facts(trees, facts)
    imports = imports_table(trees)
    convs = ConvDefs({k: trees[k] for k in context}, trees, imports)
    passed = frozenset(
        n.arg for t in trees.values() for n in ast.walk(t) if isinstance(n, ast.keyword) and n.arg
    )
    overrides = subclass_methods(trees, imports)
    zero, one = off_options(linted, trees, search=project)
    defaults = option_defaults(linted, trees, search=project)
    defaults.update(flag_defaults(linted, trees, search=project))

    def functions(k: Path, tree: ast.Module) -> Functions:
        """The file's functions and classes, with what the run adds: subclasses' overrides, the options declared
        with default 0 or 1, classes a package re-exports (`from pkg import Trainer` via pkg/__init__.py)."""
        funcs = _overridden(Functions(tree, *imports(k)), tree, overrides)
        funcs.off_options, funcs.one_options = zero, one
        funcs.option_defaults = defaults
        add_reexported(funcs, k, tree, trees, imports)
        return funcs

    checkers: dict[Path, Checker] = {}
    for k, (name, source, tree) in files.items():
        funcs = functions(k, tree)
        model = _model_from_context(tree, funcs, convs, context, k)
        checkers[k] = check_tree(
            tree, source, name, shared[k], facts[k], funcs, model_build=model, passed=passed
        )

    def context_checker(k: Path) -> Checker:
        if k not in checkers:
            name, source, tree = context[k]
            checkers[k] = check_tree(
                tree, source, name, shared[k], facts[k], functions(k, tree), context=True, passed=passed
            )
        return checkers[k]

    for k in files:  # a function of a context module that holds a loop, called from a linted file
        c = checkers[k]
        off = calls_off_by_default(c.tree, defaults)  # `elif opt.distill == "abound": init(...)`: not run
        calls = (n for n in ast.walk(c.tree) if isinstance(n, ast.Call) and id(n) not in off)
        for call in calls:
            for fn in c.funcs.resolve(call):
                home = convs.owner.get(id(fn))
                if home in context and any(isinstance(n, (ast.For, ast.While)) for n in ast.walk(fn)):
                    context_checker(home).enter(fn, Via(c, call))
    _check_foreign_helpers(checkers, convs.owner, context_checker)
    # a loader module of a program that uses the GPU feeds that GPU
    for k, others in gpu_programs(trees, facts).items():
        if k in files:
            program_loaders(checkers[k], [trees[q] for q in others])
    placed = one_switch(checkers, list(files))  # IH015 once per program, in the script that imports the model
    return [f for k in files for f in placed[k]]


def _overridden(funcs: Functions, tree: ast.Module, table: dict[int, dict[str, list[ast.AST]]]) -> Functions:
    """`self.m()` in a class that other files subclass may run their overrides of `m`."""
    for c in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and id(n) in table):
        for name, defs in table[id(c)].items():
            funcs.overrides.setdefault(name, []).extend(
                d for d in defs if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))
            )
    return funcs


def _read_paths(paths: list[Union[str, Path]]) -> dict[Path, tuple[str, str, ast.Module]]:
    """absolute path -> (name as given, source, tree) of every file to lint."""
    files: dict[Path, tuple[str, str, ast.Module]] = {}
    for p in map(Path, paths):
        if not p.exists():
            raise IdlehoundError(f"{p}: no such file or folder")
        for f in python_files(p) if p.is_dir() else [p]:
            source = read_source(f)
            files.setdefault(Path(os.path.abspath(f)), (str(f), source, parse_source(source, str(f))))
    return files


def _pinned_by_callers(
    files: dict[Path, tuple[str, str, ast.Module]], trees: dict[Path, ast.Module], facts: dict[Path, Facts]
) -> None:
    """A linted file's loader given `**data_loader_kwargs` (a parameter) is pinned when the project builds that
    dict with pin_memory set (a caller elsewhere: searched by name under the project root)."""
    found: dict[tuple[Path, str], bool] = {}
    for k, (_, source, tree) in files.items():
        if (
            facts[k].pinned or "**" not in source or "Loader" not in source
        ):  # cheap: most files have no loader
            continue
        root = project_root(k.parent)
        for name in [n for ld in _loaders(tree) if not ld.prepared for n in ld.kw_params]:
            if (root, name) not in found:
                found[(root, name)] = kwargs_pinned(
                    name, [*trees.values(), *mentioning(root, name, set(trees))]
                )
            if found[(root, name)]:
                facts[k] = replace(facts[k], pinned=True)
                break


def _pinned_by_attribute(trees: dict[Path, ast.Module], facts: dict[Path, Facts]) -> None:
    """A file that loops over an object's loader attribute (`for data in self.train_loader`) that another file read
    fills with a pinned training loader (`self.train_loader = DataLoader(..., pin_memory=True)` in a data
    manager) copies pinned batches: it counts as pinning, and shares that with the files it imports or that
    import it (the engine subclasses that copy the batch)."""
    kept = {
        n.rsplit(".", 1)[-1]
        for t in trees.values()
        for ld in _loaders(t)
        if ld.pinned() and not ld.evaluation
        for n in ld.names
        if "." in n
    }
    if not kept:
        return
    for k, tree in trees.items():
        if facts[k].pinned:
            continue
        iterated = {_iterated(n.iter) for n in ast.walk(tree) if isinstance(n, (ast.For, ast.AsyncFor))}
        if iterated & kept:
            facts[k] = replace(facts[k], pinned=True)


def _iterated(it: ast.expr) -> str:
    """The attribute a loop walks: `self.train_loader`, also inside `enumerate(...)` / `tqdm(...)` (first argument)."""
    for _ in range(3):
        if isinstance(it, ast.Call) and it.args:
            it = it.args[0]
    return it.attr if isinstance(it, ast.Attribute) else ""


def _model_from_context(
    tree: ast.Module,
    funcs: Functions,
    convs: ConvDefs,
    context: dict[Path, tuple[str, str, ast.Module]],
    path: Optional[Path] = None,
) -> Optional[tuple[ast.Call, str, bool]]:
    """The call that builds a model of a context module with convolutions, what to say of it, and whether this
    file or a project function it calls trains it (IH015 is reported only then)."""
    built = model_build(tree, funcs, convs, path)
    if built is None:
        return None
    call, where, conv = built
    func = call.func.value if isinstance(call.func, ast.Subscript) else call.func  # a registry's entry
    via = f"via {dotted(func)}: {context[where][0]}:{conv.lineno} builds a convolution"
    return call, via, _calls_training(tree, funcs)


def _calls_training(tree: ast.Module, funcs: Functions) -> bool:
    """The file calls a class or function of another file that trains (has a `backward()` call): `cm_train.py`
    builds the model and hands it to `CMTrainLoop(...).run_loop()`; an evaluation script does not."""
    return any(
        isinstance(n, ast.Call)
        and any(
            isinstance(b, ast.Call) and isinstance(b.func, ast.Attribute) and b.func.attr == "backward"
            for d in funcs.imported_defs(n)
            for b in ast.walk(d)
        )
        for n in ast.walk(tree)
    )


def _check_foreign_helpers(
    checkers: dict[Path, Checker], owner: dict[int, Path], context_checker: Callable[[Path], Checker]
) -> None:
    """A helper imported from another linted file and called every step is checked there, as per-step code; one
    from a module read for the project view is checked there too, and reported at the linted call."""
    for _ in range(3):  # bounded: helpers calling helpers across files
        moved = set()
        for c in list(checkers.values()):
            for f, level, via, tensors in c.foreign:
                where = owner.get(id(f))
                if where is None:
                    continue
                target = checkers[where] if where in checkers and not checkers[where].context else None
                target = target or context_checker(where)
                target.pending.append((f, level, via, tensors))
                moved.add(where)
            c.foreign = []
        if not moved:
            return
        for k in sorted(moved):
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
