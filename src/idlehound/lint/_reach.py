"""What runs every step through modules lint resolves by type. Calling an instance of a class of the files read
runs its forward(): also where the instance was built as `model.Net()` (a module imported whole), returned by a
factory function of such a module (`model.resnet50()`, whose body builds and returns `ResNet(...)`), wrapped
afterwards (`net = DataParallel(net).cuda()`), or is an element of a ModuleList iterated in a forward (`for flow
in self.flows: x = flow(x)`). The value such a call returns keeps the kind its name gives: a forward may return
a loss in training and predictions in evaluation."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Optional, Union

from ._syntax import dotted, own_nodes, unwrapped

if TYPE_CHECKING:
    from ._model import Functions, Scope

Func = Union[ast.FunctionDef, ast.AsyncFunctionDef]
_WRAPS = ("cuda", "to", "float", "half", "train", "eval")  # `Net(...).cuda()` is still the Net
_CONTAINERS = ("ModuleList", "Sequential")


def module_factory_class(
    call: ast.expr, modules: Mapping[str, Mapping[str, ast.AST]], classes: Mapping[str, object]
) -> str:
    """`alias.f(...)` where `f` is a top-level function of a module imported whole whose every return is an
    instance of one class of that module (`model = ResNet(...); ...; return model`): that class, as this file
    knows it (`alias.ResNet`); "" when unknown or when the returns disagree."""
    f = call.func if isinstance(call, ast.Call) else None
    if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in modules):
        return ""
    fn = modules[f.value.id].get(f.attr)
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return ""
    found = {
        _returned_class(r.value, fn) for r in own_nodes(fn.body) if isinstance(r, ast.Return) and r.value
    }
    name = f"{f.value.id}.{found.pop()}" if len(found) == 1 and found != {""} else ""
    return name if name in classes else ""


def _returned_class(value: ast.expr, fn: Func) -> str:
    """The class a returned expression builds: `Cls(...)`, or a local name every binding of which is one."""
    built = _built_name(value)
    if built or not isinstance(value, ast.Name):
        return built
    bound = [
        n.value
        for n in own_nodes(fn.body)
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == value.id for t in n.targets)
    ]
    names = {_built_name(v) for v in bound}
    return names.pop() if len(names) == 1 else ""


def _built_name(value: Optional[ast.expr]) -> str:
    value = unwrapped(value, _WRAPS) if value is not None else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id[:1].isupper():
        return value.func.id
    return ""


def builds_or_wraps(name: str, scope: Scope, built: Callable[[ast.expr, Functions], str]) -> bool:
    """Every binding of the name in this scope builds the instance (`built` names its class) or wraps the same
    name (`net = DataParallel(net)`, `net = net.cuda()`, `net, opt = amp.initialize(net, opt)`): it holds that
    instance wherever it is used. A binding lint cannot read (`net = load_net()`) leaves it unknown."""
    return all(
        (index is None and built(v, scope.funcs)) or _wraps(name, v)
        for v, index in scope.values.get(name, [])
    )


def _wraps(name: str, value: ast.expr) -> bool:
    value = unwrapped(value, _WRAPS)  # `DataParallel(net).cuda()`
    if not isinstance(value, ast.Call):
        return False
    f = value.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == name:
        return f.attr in _WRAPS
    return any(isinstance(a, ast.Name) and a.id == name for a in value.args[:1])


def module_elements(methods: list[Func], built: Callable[[ast.expr], str]) -> dict[str, set[str]]:
    """`self.blocks = nn.ModuleList([Block(...) for _ in range(n)])`, or one filled by `self.blocks.append(
    Block(...))` (or built from a local list filled so): "self.blocks" -> the classes of its elements."""
    out: dict[str, set[str]] = {}
    for fn in methods:
        appended: dict[str, set[str]] = {}  # `layers.append(Cls(...))` of a local list or a `self.` attribute
        for n in ast.walk(fn):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr in ("append", "extend")
            ):
                for a in n.args:
                    appended.setdefault(dotted(n.func.value), set()).update(_classes_in(a, built))
        for n in ast.walk(fn):
            if not (isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)):
                continue
            if dotted(n.value.func).rsplit(".", 1)[-1] not in _CONTAINERS:
                continue
            found: set[str] = set()
            for a in n.value.args:
                found |= _classes_in(a, built) | (
                    appended.get(a.id, set()) if isinstance(a, ast.Name) else set()
                )
            for t in n.targets:
                if dotted(t).startswith("self."):
                    out.setdefault(dotted(t), set()).update(found | appended.get(dotted(t), set()))
    return {k: v for k, v in out.items() if v}


def _classes_in(e: ast.expr, built: Callable[[ast.expr], str]) -> set[str]:
    return {c for n in ast.walk(e) if isinstance(n, ast.Call) and (c := built(n))}


def _iterated_attr(name: str, fn: Func) -> str:
    """The `self.` attribute every loop binding this name iterates (`for flow in self.flows`, `for i, block in
    enumerate(self.blocks)`, `reversed(self.flows)`); "" otherwise."""
    found: set[str] = set()
    for n in own_nodes(fn.body):
        if not isinstance(n, (ast.For, ast.AsyncFor)):
            continue
        if name not in {x.id for x in ast.walk(n.target) if isinstance(x, ast.Name)}:
            continue
        it, target = n.iter, n.target
        if (
            isinstance(it, ast.Call)
            and dotted(it.func) == "enumerate"
            and it.args
            and isinstance(target, ast.Tuple)
        ):
            it, target = it.args[0], target.elts[-1]
        if isinstance(it, ast.Call) and dotted(it.func) == "reversed" and it.args:
            it = it.args[0]
        ok = isinstance(target, ast.Name) and target.id == name and dotted(it).startswith("self.")
        found.add(dotted(it) if ok else "")
    return found.pop() if len(found) == 1 else ""


def element_forwards(funcs: Functions, name: str, scope: Optional[Scope]) -> list[Func]:
    """`flow(x)` in `for flow in self.flows:` where the ModuleList holds instances of classes of the files read:
    the forward() of each."""
    if scope is None or not isinstance(scope.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    classes = funcs.elements.get(_iterated_attr(name, scope.node), set())
    return [m for c in sorted(classes) if (m := funcs.classes.get(c, {}).get("forward")) is not None]


def typed_call(funcs: Functions, call: ast.Call, scope: Scope) -> bool:
    """A module called through an instance resolved only by this module's reading (a ModuleList element, an
    instance of a class of a module imported whole or returned by its factory)."""
    f = call.func
    if not isinstance(f, ast.Name) or f.id in funcs.plain:
        return False
    return bool(element_forwards(funcs, f.id, scope)) or any("." in c for c in _built_anywhere(scope, f.id))


def _built_anywhere(scope: Scope, name: str) -> set[str]:
    s: Optional[Scope] = scope
    while s is not None:
        if name in s.built:
            return s.built[name]
        s = s.parent
    return set()
