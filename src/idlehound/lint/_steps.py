"""What counts as a training step: a backward() or an optimizer's step, directly or through a function of the
same file, and the body of a loop that reaches one."""

from __future__ import annotations

import ast
from typing import Optional, Union

from ._model import Functions, Scope
from ._refs import passed_functions
from ._syntax import dotted, own_nodes


def is_step_call(call: ast.Call, scope: Scope) -> bool:
    """loss.backward(), optimizer.step(), scaler.step(opt), loss_scaler(loss, optimizer); not scheduler.step() or
    env.step(action)."""
    f = call.func
    if _scaler_call(call, scope):
        return True
    if not isinstance(f, ast.Attribute):
        return False
    if f.attr == "backward":
        return True
    if f.attr != "step":
        return False
    recv = dotted(f.value)
    role = scope.role(recv)
    if role:
        return role == "optimizer"
    last = recv.rsplit(".", 1)[-1].lower()
    return _optimizer_word(last) or last in ("scaler", "grad_scaler")


def _optimizer_word(last: str) -> bool:
    return ("opt" in last and "sched" not in last) or "optim" in last


def _scaler_call(call: ast.Call, scope: Scope) -> bool:
    """timm's NativeScaler idiom (DeiT, MAE, BEiT...): `loss_scaler(loss, optimizer, ...)` calls backward() and
    the optimizer's step() inside, in a file that may not be linted."""
    if "scaler" not in dotted(call.func).rsplit(".", 1)[-1].lower():
        return False
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        name = dotted(arg)
        if name and (scope.role(name) == "optimizer" or _optimizer_word(name.rsplit(".", 1)[-1].lower())):
            return True
    return False


def reaches_step(
    stmts: list[ast.stmt], funcs: Functions, scope: Scope, depth: int = 0, seen: Optional[set[int]] = None
) -> bool:
    """Whether these statements call backward()/step() without entering a nested loop, directly or through a
    function of the same file (followed two levels)."""
    seen = set() if seen is None else seen
    for node in own_nodes(stmts, into_loops=False, into_defs=True):
        if not isinstance(node, ast.Call):
            continue
        if is_step_call(node, scope):
            return True
        if depth < 3:
            for f in funcs.resolve(node, scope) + passed_functions(node, funcs, scope):
                if id(f) not in seen:
                    seen.add(id(f))
                    if reaches_step(f.body, funcs, funcs.scope(f, 1), depth + 1, seen):
                        return True
    return False


def loop_body(loop: Union[ast.For, ast.AsyncFor, ast.While]) -> list[ast.stmt]:
    return list(loop.body) + list(getattr(loop, "orelse", []))
