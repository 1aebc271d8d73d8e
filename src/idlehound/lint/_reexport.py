"""Classes a package re-exports: `from dalle2_pytorch import DiffusionPriorTrainer` where the package's
`__init__.py` does `from dalle2_pytorch.trainer import DiffusionPriorTrainer`. Their methods run when the linted
file calls them (`trainer.update()` takes the optimizer step), so the training loop is seen. Only the calls are
followed: a re-exported model is still not a model built for IH015 (see docs/lint.md, "Not modelled")."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from ._model import Functions
from ._project import Imports, _imports, _module_paths


def add_reexported(
    funcs: Functions,
    path: Path,
    tree: ast.Module,
    trees: dict[Path, ast.Module],
    imports: Callable[[Path], Imports],
) -> None:
    """Register, as `Functions` does for classes imported directly, the classes this file imports from a
    package `__init__.py` that imports them from one of its own modules (one hop)."""
    direct = imports(path)[0]
    for module, _names, roots, node in _imports(tree, path.parent):
        if not isinstance(node, ast.ImportFrom):
            continue
        inits = [
            p for p in _module_paths(module, roots) if p in trees and p.name == "__init__.py" and p != path
        ]
        for a in node.names:
            name = a.asname or a.name
            if name in direct or a.name == "*":
                continue
            found = next((imports(i)[0].get(a.name) for i in inits if a.name in imports(i)[0]), None)
            if isinstance(found, ast.ClassDef) and name not in funcs.classes:
                funcs.import_class(name, found)
