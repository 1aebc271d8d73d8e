"""A project function that all-reduces or gathers the tensors it is given and returns them (SlowFast's
`du.all_reduce([loss, grad_norm])`, pycls's `dist.scaled_all_reduce([loss, top1])`, a `pad_gather_reduce(trainer,
loss)` around `accelerator.gather`) is a collective call wherever it runs, whatever its name: called every step,
every process waits there for the slowest one. Known by its body, not its name: a function that reduces only what
it reaches from its parameters and returns nothing (`average_gradients(model)`: hand-written gradient averaging,
needed every step) is not one, nor a model's `forward` (Barlow Twins all-reduces its cross-correlation matrix
there: part of the computation, as a VQ codebook's statistics are)."""

from __future__ import annotations

import ast

from ._syntax import dotted, own_nodes

_ALL = ("all_reduce", "all_gather", "all_gather_into_tensor")
_DIST = ("dist", "distributed")


def reduces_given(fn: ast.AST) -> bool:
    """`fn` passes a value derived from its parameters to a collective (`dist.all_reduce(t)` for `t in
    tensors`, `accelerator.gather(padded)`) and returns what it reduced or the collective's result (not a value
    the reduced one only normalises)."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name == "forward":
        return False  # (a model's forward reducing its statistics, Barlow Twins' `all_reduce(c)`: the computation)
    derived = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    loops: dict[str, set[str]] = {}  # loop variable -> the names its iterable reads
    reduced: set[str] = set()  # reduced in place, or holding a collective's result
    returned = False
    for n in own_nodes(fn.body):  # in source order: `x = x.to(d)`, `padded = pad(x)`, `for t in tensors:`
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            names = {x.id for t in targets for x in ast.walk(t) if isinstance(x, ast.Name)}
            if _mentions(n.value, derived):
                derived |= names
            own = names if isinstance(n, ast.AugAssign) else set()  # `q /= total`: q's other values too
            if _only_reduced(n.value, own, derived, reduced) or any(
                _reduces(c, derived) for c in ast.walk(n.value)
            ):
                reduced |= names
        elif isinstance(n, (ast.For, ast.AsyncFor)) and _mentions(n.iter, derived):
            read = {x.id for x in ast.walk(n.iter) if isinstance(x, ast.Name)}
            for x in ast.walk(n.target):
                if isinstance(x, ast.Name):
                    derived.add(x.id)
                    loops[x.id] = read
        elif isinstance(n, ast.Call) and _reduces(n, derived):
            given = {x.id for x in ast.walk(n.args[0]) if isinstance(x, ast.Name)}
            reduced |= given | {r for g in given for r in loops.get(g, set())}
        elif isinstance(n, ast.Return) and n.value is not None:
            returned = returned or _only_reduced(n.value, set(), derived, reduced)
    return returned


def _only_reduced(e: ast.expr, also: set[str], derived: set[str], reduced: set[str]) -> bool:
    """`e` reads reduced values and no other value derived from the parameters (`gathered[gathered != 0]`,
    `torch.mean(masked)`; not SwAV's `q / total` after `all_reduce(total)`: a normaliser the computation needs)."""
    read = {x.id for x in ast.walk(e) if isinstance(x, ast.Name)} | also
    return bool(read & reduced) and not (read & derived) - reduced


def _reduces(n: ast.AST, derived: set[str]) -> bool:
    return isinstance(n, ast.Call) and _is_collective(n) and bool(n.args) and _mentions(n.args[0], derived)


def _is_collective(call: ast.Call) -> bool:
    """`dist.all_reduce(t)`, `comm.all_gather(t)`, `accelerator.gather(t)`, `dist.reduce(t, 0)`; not
    `torch.gather(t, 1, index)`."""
    recv, _, method = dotted(call.func).rpartition(".")
    if method in _ALL:
        return bool(recv)
    return method in ("gather", "reduce") and (
        "accelerator" in recv.lower() or recv.rsplit(".", 1)[-1] in _DIST
    )


def _mentions(e: ast.expr, names: set[str]) -> bool:
    return any(isinstance(x, ast.Name) and x.id in names for x in ast.walk(e))
