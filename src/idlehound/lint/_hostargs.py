"""Host copies handed to a helper: `log(model, loss.cpu(), correct.cpu())` gives `Log.__call__` CPU tensors, so
`loss.sum().item()` in it (or in the method it passes them on to) reads host memory and waits for nothing (the
wait is the `.cpu()` at the call, reported there as IH002)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from ._model import PY
from ._syntax import dotted

if TYPE_CHECKING:
    from ._model import Func, Scope

HOST = "host:"  # marks a parameter name, in a pending helper's parameter set, as given a host value
_COPIES = ("cpu", "numpy", "tolist", "item")


def host_params(fn: Func, call: ast.Call, scope: Scope) -> frozenset[str]:
    """The parameters of `fn` this call passes a host copy (`x.cpu()`, `x.detach().cpu()`, `.numpy()`) or a name
    known to hold one (a parameter given one by its own caller)."""
    return passed_params(fn, call, lambda a: _host(a, scope))


def passed_params(fn: Func, call: ast.Call, test: Callable[[ast.expr], bool]) -> frozenset[str]:
    """The parameters of `fn` to which this call passes an argument that passes `test` (a method's `self` is the
    receiver, not an argument)."""
    if dotted(call.func).rsplit(".", 1)[-1] != fn.name and fn.name not in ("forward", "__call__"):
        return frozenset()  # run through a `partial(f, ...)`: which argument lands where is not followed
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    out = set()
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred) or i >= len(params):
            break
        if test(a):
            out.add(params[i])
    named = set(params) | {a.arg for a in fn.args.kwonlyargs}
    out |= {k.arg for k in call.keywords if k.arg in named and test(k.value)}
    return frozenset(out)


def _host(a: ast.expr, scope: Scope) -> bool:
    if isinstance(a, ast.Call) and isinstance(a.func, ast.Attribute) and a.func.attr in _COPIES:
        return True  # `loss.cpu()`, `(out == y).cpu()`, `t.detach().cpu().numpy()`
    return isinstance(a, ast.Name) and a.id in scope.host


def mark_host(tensors: frozenset[str], hosts: frozenset[str]) -> frozenset[str]:
    """One set for both: the tensor parameters, and the host ones marked with HOST."""
    return frozenset(tensors - hosts) | {HOST + h for h in hosts}


def host_use(recv: ast.expr, scope: Scope) -> bool:
    """`loss.sum().item()` where `loss` is a parameter given a host copy and not yet rebound above this line
    (`loss = running / steps` further down, in a logging branch, does not change what it holds here)."""
    root = recv
    while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
        root = root.func if isinstance(root, ast.Call) else root.value
    if not isinstance(root, ast.Name) or root.id not in scope.host:
        return False
    line = getattr(recv, "lineno", 0)
    return not any(
        isinstance(n, ast.Name) and n.id == root.id and isinstance(n.ctx, ast.Store) and n.lineno <= line
        for n in ast.walk(scope.node)
    )


def given_host(scope: Scope, params: frozenset[str]) -> None:
    """Mark the parameters given a host copy (HOST-prefixed in `params`) as Python values of the scope."""
    for p in (p[len(HOST) :] for p in params if p.startswith(HOST)):
        scope.fixed[p] = [PY]
        scope.host.add(p)


def self_derived(value: ast.expr, name: str) -> bool:
    """`loc_t = loc_t.cuda()`, `loc_t = Variable(loc_t)`: a rebinding made from the name itself, which does not
    change where its data was first built (a host tensor stays host-built up to its copy)."""
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(value))
