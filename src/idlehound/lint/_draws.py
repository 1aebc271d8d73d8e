"""A loop that draws its batch itself and steps in an inner loop: `while True: x, c = next(train_iterator); ...;
for phase in phases: ...; phase.opt.step()` (StyleGAN's phases, sub-batches). Each pass of the outer loop is one
training step, so what it does outside the inner loop (copying the batch to the GPU) runs every step. An epoch
loop is not one: its inner loop draws the batches (`for x in loader`), the outer one draws none."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Union

from ._steps import loop_body, reaches_step
from ._syntax import dotted, is_loader, own_nodes

if TYPE_CHECKING:
    from ._model import Functions, Scope

_EVAL = ("val", "test", "eval")


def draws_and_steps(loop: Union[ast.For, ast.AsyncFor, ast.While], funcs: Functions, scope: Scope) -> bool:
    """The loop's own statements call `next(it)` on an iterator over a training DataLoader
    (`it = iter(DataLoader(...))` in this function), and a loop nested in it reaches the optimizer step."""
    body = loop_body(loop)
    draws = any(
        isinstance(n, ast.Call) and dotted(n.func) == "next" and n.args and _loader_iterator(n.args[0], scope)
        for n in own_nodes(body, into_loops=False)
    )
    if not draws:
        return False
    inner = [n for n in own_nodes(body) if isinstance(n, (ast.For, ast.AsyncFor, ast.While))]
    return any(reaches_step(loop_body(i), funcs, scope) for i in inner)


def _loader_iterator(e: ast.expr, scope: Scope) -> bool:
    name = dotted(e)
    if not name or any(w in name.lower() for w in _EVAL):
        return False
    for value, index in scope.values.get(name, []):
        if index is None and isinstance(value, ast.Call) and dotted(value.func) == "iter" and value.args:
            inner = value.args[0]
            if isinstance(inner, ast.Call) and is_loader(inner):
                return True
            if dotted(inner) in scope.all_loaders() and not any(w in dotted(inner).lower() for w in _EVAL):
                return True
    return False
