"""Buffers a class registers on the host: `self.register_buffer("steps", torch.tensor(0))` in a class that never
moves itself to a device. A step counter kept that way is read with `.item()` without waiting for the GPU."""

from __future__ import annotations

import ast

from ._syntax import const, dotted, kw

_DEVICE_METHODS = {"to", "cuda", "to_empty"}


def host_buffers(tree: ast.Module) -> dict[int, set[str]]:
    """Each method (by id) -> the `self.` attributes its class registers as buffers built from Python numbers
    without a device (`torch.tensor(0)`, `torch.Tensor([0])`), in a trainer class (one that calls backward() or
    steps an optimizer: a model's own counters may move with the model) that never moves itself (`self.to(...)`,
    `self.cuda()`) and that this file never moves either (`Trainer(...).cuda()`)."""
    out: dict[int, set[str]] = {}
    moved = {_built_class(n) for n in ast.walk(tree) if isinstance(n, ast.Call) and _moves(n)}
    for c in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name not in moved):
        calls = [n for n in ast.walk(c) if isinstance(n, ast.Call)]
        if any(_moves(n) and dotted(n.func).split(".")[:-1] == ["self"] for n in calls):
            continue  # `self.to(device)` moves its buffers
        if not any(_trains(n) for n in calls):
            continue
        names = {f"self.{name}" for n in calls if (name := _host_buffer(n))}
        for m in c.body if names else []:
            if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out[id(m)] = names
    return out


def _moves(n: ast.Call) -> bool:
    return isinstance(n.func, ast.Attribute) and n.func.attr in _DEVICE_METHODS


def _built_class(n: ast.Call) -> str:
    """`Trainer(...).cuda()`: "Trainer"."""
    recv = n.func.value if isinstance(n.func, ast.Attribute) else None
    return dotted(recv.func).rsplit(".", 1)[-1] if isinstance(recv, ast.Call) else ""


def _trains(call: ast.Call) -> bool:
    """`self.accelerator.backward(loss)`, `loss.backward()`, `self.optim.step()`."""
    name = dotted(call.func)
    last = name.rsplit(".", 2)[-2:]
    return last[-1] == "backward" or (last[-1] == "step" and len(last) == 2 and "opt" in last[0].lower())


def _host_buffer(call: ast.Call) -> str:
    """`self.register_buffer("steps", torch.tensor(0))`: "steps"; else ""."""
    if dotted(call.func) != "self.register_buffer" or len(call.args) < 2:
        return ""
    name, value = const(call.args[0]), call.args[1]
    if not isinstance(name, str) or not isinstance(value, ast.Call) or kw(value, "device") is not None:
        return ""
    if dotted(value.func) not in ("torch.tensor", "torch.Tensor", "torch.LongTensor", "torch.zeros"):
        return ""
    numbers = [n for a in value.args for n in ast.walk(a) if isinstance(n, ast.Constant)]
    plain = all(
        isinstance(n, (ast.Constant, ast.List, ast.Tuple, ast.Load)) for a in value.args for n in ast.walk(a)
    )
    return name if plain and numbers else ""
