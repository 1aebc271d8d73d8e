"""Switches left off along the call path: `model(imgs)` runs `forward(self, x, augment=False, profile=False)`
without `profile`, and `forward` hands its own `profile` on (`self.forward_once(x, profile)`): in `forward_once`,
`if profile:` (which times each layer with `torch.cuda.synchronize()`) is not taken on the training path."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ._syntax import dotted

if TYPE_CHECKING:
    from ._model import Func, Scope

OFF = "off:"  # marks a parameter name, in a pending helper's parameter set, as left False/None by its caller


def off_params(fn: Func, call: ast.Call, scope: Scope) -> frozenset[str]:
    """OFF-marked parameters of `fn` that default to False/None and that this call does not pass, or passes a
    name that is itself such a parameter of the caller. None when the call unpacks arguments (`*a`, `**kw`)."""
    if dotted(call.func).rsplit(".", 1)[-1] != fn.name and fn.name not in ("forward", "__call__"):
        return frozenset()  # run through a `partial(f, ...)`: which argument lands where is not followed
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return frozenset()
    a = fn.args
    every = a.posonlyargs + a.args
    names = [x.arg for x in every]
    offset = 1 if names and names[0] in ("self", "cls") else 0
    defaults = dict(zip(names[len(names) - len(a.defaults) :], a.defaults))
    defaults |= {x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None}
    given = {names[i + offset]: v for i, v in enumerate(call.args) if i + offset < len(names)}
    given |= {k.arg: k.value for k in call.keywords if k.arg}
    out = set()
    for p, d in defaults.items():
        if not (isinstance(d, ast.Constant) and d.value in (False, None)):
            continue
        v = given.get(p)
        if v is None or isinstance(v, ast.Name) and v.id in scope.off:
            out.add(OFF + p)
    return frozenset(out)


def given_off(scope: Scope, params: frozenset[str]) -> None:
    scope.off |= {p[len(OFF) :] for p in params if p.startswith(OFF)}


def off_here(test: ast.expr, scope: Scope) -> bool:
    """`if profile:` on a parameter left off by the caller on the training path, not rebound in the function."""
    if not isinstance(test, ast.Name) or test.id not in scope.off:
        return False
    return not any(
        isinstance(n, ast.Name) and n.id == test.id and isinstance(n.ctx, ast.Store)
        for n in ast.walk(scope.node)
    )
