"""**kwargs of a call: dicts built in the same function or module."""

from __future__ import annotations

import ast
from typing import Any, Literal, Optional, Union

from ._syntax import const, dotted, own_nodes


def resolve_kwargs(
    value: ast.expr, scopes: list[ast.AST], depth: int = 0
) -> Optional[dict[str, list[ast.expr]]]:
    """Keys (and their possible values) a `**value` can pass, or None when it cannot be known."""
    if depth > 3:
        return None
    if isinstance(value, ast.Dict):
        out: dict[str, list[ast.expr]] = {}
        for k, v in zip(value.keys, value.values):
            if k is None:  # {**other}
                sub = resolve_kwargs(v, scopes, depth + 1)
                if sub is None:
                    return None
                _merge(out, sub)
            elif isinstance(k, ast.Constant) and isinstance(k.value, str):
                out.setdefault(k.value, []).append(v)
            else:
                return None
        return out
    if isinstance(value, ast.Call) and dotted(value.func) == "dict" and not value.args:
        return _kwargs_of(value, scopes, depth)
    if isinstance(value, ast.IfExp):
        a, b = resolve_kwargs(value.body, scopes, depth + 1), resolve_kwargs(value.orelse, scopes, depth + 1)
        return None if a is None or b is None else _merge(a, b)
    if isinstance(value, ast.Name):
        return _resolve_name(value.id, scopes, depth)
    return None


def _kwargs_of(call: ast.Call, scopes: list[ast.AST], depth: int) -> Optional[dict[str, list[ast.expr]]]:
    out: dict[str, list[ast.expr]] = {}
    for k in call.keywords:
        if k.arg is None:
            sub = resolve_kwargs(k.value, scopes, depth + 1)
            if sub is None:
                return None
            _merge(out, sub)
        else:
            out.setdefault(k.arg, []).append(k.value)
    return out


def _merge(a: dict[str, list[ast.expr]], b: dict[str, list[ast.expr]]) -> dict[str, list[ast.expr]]:
    for k, vs in b.items():
        a.setdefault(k, []).extend(vs)
    return a


def _resolve_name(name: str, scopes: list[ast.AST], depth: int) -> Optional[dict[str, list[ast.expr]]]:
    """Every way `name` is built in the innermost scope that binds it; any unreadable step gives None."""
    for i in range(len(scopes) - 1, -1, -1):
        scope: Any = scopes[i]  # a module or a function: both have a body
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = scope.args
            if name in {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs} or (
                a.kwarg is not None and a.kwarg.arg == name
            ):
                return None  # a parameter: whatever the caller passes
        out: dict[str, list[ast.expr]] = {}
        bound = False
        for node in own_nodes(scope.body):
            found = _dict_step(node, name, scopes[: i + 1], depth)
            if found is False:
                continue
            if found is None:
                return None
            bound = True
            _merge(out, found)
        if bound:
            return out
    return None


def _dict_step(
    node: ast.AST, name: str, scopes: list[ast.AST], depth: int
) -> Union[dict[str, list[ast.expr]], None, Literal[False]]:
    """What this statement adds to dict `name`: a key map, None (unreadable) or False (not about `name`)."""
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
        return resolve_kwargs(node.value, scopes, depth + 1)
    if isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name
        for t in node.targets
    ):
        t = next(t for t in node.targets if isinstance(t, ast.Subscript))
        key = const(t.slice)
        return {key: [node.value]} if isinstance(key, str) else None
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
        return resolve_kwargs(node.value, scopes, depth + 1)  # kwargs |= {...}
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == name
    ):
        if node.func.attr == "update":
            if len(node.args) > 1:
                return None
            out = resolve_kwargs(node.args[0], scopes, depth + 1) if node.args else {}
            return None if out is None else _merge(out, _kwargs_of(node, scopes, depth) or {})
        if node.func.attr == "setdefault" and node.args and isinstance(const(node.args[0]), str):
            return {const(node.args[0]): node.args[1:2]}
        if node.func.attr in ("pop", "get", "copy", "items", "keys", "values"):
            return False
        return None
    return False
