"""Step functions a framework runs: a function that takes one training step itself (its own body calls backward()
or an optimizer's step(), outside any loop of its own) and is handed by name to a call (`Engine(train_step)`,
`Trainer(step_fn=update)`) has no visible loop around it, but the framework calls it once per batch."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ._steps import is_step_call, reaches_step
from ._syntax import dotted, own_nodes

if TYPE_CHECKING:
    from ._model import Func, Functions

# calls that run a function once per process or thread, not once per batch
_LAUNCHERS = {
    "spawn",
    "start_processes",
    "Process",
    "Thread",
    "submit",
    "apply_async",
    "launch",
    "elastic_launch",
}


def handed_steps(tree: ast.Module, funcs: Functions) -> list[Func]:
    """The functions of this file handed by name to a call (positionally or by keyword, never called by name in
    the file) whose own body takes the training step."""
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    handed: set[str] = set()
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        if dotted(call.func).rsplit(".", 1)[-1] in _LAUNCHERS:
            continue  # `mp.spawn(demo, ...)`: once per process, not once per batch
        for a in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(a, ast.Name) and a.id not in called:
                handed.add(a.id)
    out: list[Func] = []
    for name in sorted(handed):
        for f in funcs.plain.get(name, []):
            if _takes_step(f, funcs) and f not in out:
                out.append(f)
    return out


def _takes_step(f: Func, funcs: Functions) -> bool:
    """backward()/step() in the function's own statements (not in a loop or a nested definition of it), or in a
    function of the file it calls there."""
    scope = funcs.scope(f, 1)
    for node in own_nodes(f.body, into_loops=False):
        if not isinstance(node, ast.Call):
            continue
        if is_step_call(node, scope):
            return True
        if any(reaches_step(g.body, funcs, funcs.scope(g, 2), 2) for g in funcs.resolve(node, scope)):
            return True
    return False
