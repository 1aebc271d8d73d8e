"""Names annotated with a class of the files read: `def train(trainer: DiffusionPriorTrainer, ...)` or
`trainer: DiffusionPriorTrainer = make_model(...)` hold an instance of that class, so `trainer.update()` runs its
method (the optimizer step)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ._syntax import own_nodes

if TYPE_CHECKING:
    from ._model import Functions


def annotated_class(node: ast.AST, name: str, funcs: Functions) -> str:
    """The class of the files read that `name` is annotated with in this function (a parameter, or a local
    `name: Cls = ...`), else ""."""
    found = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        for p in a.posonlyargs + a.args + a.kwonlyargs:
            if p.arg == name and p.annotation is not None:
                found.add(_class_of(p.annotation, funcs))
    body = node.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)) else []
    for n in own_nodes(body):
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.target.id == name:
            found.add(_class_of(n.annotation, funcs))
    return next(iter(found)) if len(found) == 1 else ""


def _class_of(annotation: ast.expr, funcs: Functions) -> str:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):  # `x: "Trainer"`
        return annotation.value if annotation.value in funcs.classes else ""
    return annotation.id if isinstance(annotation, ast.Name) and annotation.id in funcs.classes else ""
