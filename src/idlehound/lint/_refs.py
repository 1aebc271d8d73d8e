"""Functions run without being called by name: a `functools.partial` of one (`backwards = partial(loss_backwards,
fp16)`, then `backwards(loss, opt)`), one handed to a call that runs it (`retry_call(model.train, tries=3)`,
`loss.register_hook(raise_if_nan)`), and one a factory returns (`train = make_train_fn(G, D)`, then
`train(x, y)`: the `def train` nested in the factory)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

from ._syntax import dotted

if TYPE_CHECKING:
    from ._model import Func, Functions, Scope


def partial_target(name: str, scope: Optional[Scope]) -> Optional[ast.expr]:
    """The function a name is bound to with `partial(f, ...)` in its function or an enclosing scope (every binding
    of the name must be one, of the same function)."""
    s = scope
    while s is not None:
        bound = s.values.get(name)
        if bound:
            targets = {
                dotted(v.args[0])
                for v, index in bound
                if index is None
                and isinstance(v, ast.Call)
                and dotted(v.func) in ("partial", "functools.partial")
                and v.args
            }
            firsts = [v.args[0] for v, _ in bound if isinstance(v, ast.Call) and v.args]
            ok = len(targets) == 1 and "" not in targets and len(firsts) == len(bound)
            return firsts[0] if ok else None
        if name in s.fixed:
            return None
        s = s.parent
    return None


def passed_functions(call: ast.Call, funcs: Functions, scope: Optional[Scope]) -> list[Func]:
    """Functions of the files read that this call is handed as a positional argument (a reference, not a call):
    the callee runs them (`retry_call(model.train, ...)`, `register_hook(raise_if_nan)`)."""
    out: list[Func] = []
    for a in call.args:
        if isinstance(a, (ast.Name, ast.Attribute)) and dotted(a):
            name = dotted(a).rsplit(".", 1)[-1]
            # a function or method by its own name; not an object (`train(model, loss_scaler)`: the callee may
            # call it, or not, and not necessarily every step)
            out += [f for f in funcs.resolve(ast.Call(func=a, args=[], keywords=[]), scope) if f.name == name]
    return out


def returned_functions(name: str, funcs: Functions, scope: Optional[Scope]) -> list[Func]:
    """The functions nested in a factory of the files read that a name is bound to by calling it (`train =
    train_fns.GAN_training_function(G, D, ...)`, whose body ends `return train`): every binding of the name must
    be such a call (one per option is fine: `else: train = train_fns.dummy_training_function()`)."""
    s = scope
    while s is not None:
        bound = s.values.get(name)
        if bound:
            out: list[Func] = []
            for v, index in bound:
                found = _returned(v, funcs, s) if index is None and isinstance(v, ast.Call) else []
                if not found:
                    return []
                out += found
            return out
        if name in s.fixed:
            return []
        s = s.parent
    return []


def _returned(call: ast.Call, funcs: Functions, scope: Scope) -> list[Func]:
    out: list[Func] = []
    for factory in funcs.resolve(call, scope):
        nested = {n.name: n for n in factory.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        out += [
            nested[n.value.id]
            for n in factory.body
            if isinstance(n, ast.Return) and isinstance(n.value, ast.Name) and n.value.id in nested
        ]
    return out
