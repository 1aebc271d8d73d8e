"""Small syntax helpers shared by lint's modules: dotted names, keyword arguments, constants, own nodes."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from typing import Any, Optional

from ._vocab import _LOADERS

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call):
        parts.append(dotted(node.func) + "()")
    return ".".join(reversed(parts))


def is_loader(call: ast.Call) -> bool:
    """`DataLoader(...)` or a library subclass with its signature (`wds.WebLoader(...)`)."""
    return dotted(call.func).rsplit(".", 1)[-1] in _LOADERS


def kw(call: ast.Call, name: str) -> Optional[ast.expr]:
    return next((k.value for k in call.keywords if k.arg == name), None)


def const(node: Optional[ast.expr]) -> Any:
    return node.value if isinstance(node, ast.Constant) else None


def own_nodes(
    stmts: Iterable[ast.AST], into_loops: bool = True, into_defs: bool = False
) -> Iterator[ast.AST]:
    """Nodes of these statements, iteratively; nested loops and definitions only when asked."""

    def wanted(n: ast.AST) -> bool:
        if isinstance(n, _LOOPS) and not into_loops:
            return False
        return into_defs or not isinstance(n, _DEFS) or isinstance(n, ast.Lambda)

    stack = [n for n in stmts if wanted(n)][::-1]
    while stack:
        node = stack.pop()
        yield node
        stack += [c for c in ast.iter_child_nodes(node) if wanted(c)][::-1]
