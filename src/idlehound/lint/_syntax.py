"""Small syntax helpers shared by lint's modules: dotted names, keyword arguments, constants, own nodes."""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable, Iterator
from typing import Any, Optional, Union

from ._vocab import _LOADERS

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
Func = Union[ast.FunctionDef, ast.AsyncFunctionDef]


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


def conjuncts(test: ast.expr) -> list[ast.expr]:
    """The parts of `a and b and c`, each of which must hold for the branch to run; else the test itself."""
    return test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]


def if_tests(tree: ast.AST) -> Iterator[tuple[ast.expr, list[ast.expr]]]:
    """Each `if` statement's test with its parts (the operands of a top-level `and` / `or`, else the test)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            yield test, (test.values if isinstance(test, ast.BoolOp) else [test])


def unwrapped(value: ast.expr, methods: Collection[str]) -> ast.expr:
    """`Net(...).cuda().train()` -> `Net(...)`: calls of methods that return their receiver, peeled off."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in methods
        and isinstance(value.func.value, ast.Call)
    ):
        value = value.func.value
    return value


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


def calls_of(name: str, tree: ast.Module) -> list[tuple[Optional[Func], ast.Call]]:
    """Each `name(...)` call in a file, with the top-level function or method it is in (None: module level)."""
    out: list[tuple[Optional[Func], ast.Call]] = []
    holders: list[tuple[Optional[Func], list[ast.stmt]]] = [(None, tree.body)]
    holders += [(n, n.body) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for holder, body in holders:
        for n in own_nodes(body):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name:
                out.append((holder, n))
    return out


def bound_names(stmt: ast.stmt) -> set[str]:
    """Names a statement binds anywhere in it (assignments, loop targets, `with ... as`, `:=`, nested defs)."""
    out: set[str] = set()
    for n in own_nodes([stmt], into_defs=False):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
    return out
