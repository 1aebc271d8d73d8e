"""The small questions the Checker asks of one call, test or value: is it a collective, a periodic branch, a
logger, a tensor built on the host in the step, a loader kept under this name."""

from __future__ import annotations

import ast
import re
from typing import Optional

from ._facts import _Loader
from ._hostargs import self_derived
from ._model import Scope, _Bound
from ._syntax import dotted, kw

# helpers that all-reduce a logged value (MAE's all_reduce_mean, DETR's reduce_dict, timm's reduce_tensor, a
# distributed backend's average_all(loss)); not dist.all_reduce itself, nor average_gradients(model): hand-written
# gradient averaging needs it every step
_REDUCE_HELPER = re.compile(
    r"(^|_)reduce_(mean|sum|dict|loss_dict|tensor|tensors|value|values|loss|losses|scalar)$"
    r"|(^|_)(average|avg)_(all|tensor|tensors|loss|losses|dict|value|values|scalar)$"
)


def _collective(name: str) -> bool:
    recv, _, method = name.rpartition(".")
    if method == "barrier":
        return recv.rsplit(".", 1)[-1] in ("dist", "distributed")
    if _REDUCE_HELPER.search(method):
        return True
    # reduce and check_trigger (a reduce, then a host read) make every process wait as gather does
    return (
        method in ("wait_for_everyone", "gather", "reduce", "check_trigger") and "accelerator" in recv.lower()
    )


def _kept_in(ld: _Loader, f: ast.AST) -> bool:
    """A loader built in function `f` and not returned from it: its batches are used there (a loader-building
    function's batches go wherever its callers copy them)."""
    if not any(n is ld.call for n in ast.walk(f)):
        return False
    returned = [r.value for r in ast.walk(f) if isinstance(r, ast.Return) and r.value is not None]
    names = {n.id for r in returned for n in ast.walk(r) if isinstance(n, ast.Name)}
    inside = any(n is ld.call for r in returned for n in ast.walk(r))
    return not inside and not names & set(ld.names)


def _pinned_here(node: ast.Call) -> bool:
    """`x.pin_memory().to(device)`: the copy is of pinned memory whatever the loaders do."""
    f = node.func
    return (
        isinstance(f, ast.Attribute)
        and isinstance(f.value, ast.Call)
        and isinstance(f.value.func, ast.Attribute)
        and f.value.func.attr == "pin_memory"
    )


def _built(e: ast.expr, scope: Scope, depth: int) -> bool:
    """Whether a value is a tensor made by a `torch.*` call (a constructor, `cat`, `stack`...) in pageable memory:
    directly, through methods on it (`.fill_(0)`, not `.pin_memory()`), a name bound only to such values (a list
    it was gathered in aside), or the return of a function of the linted files."""
    if depth > 8:  # (each method, operand or binding followed is one level)
        return False
    if isinstance(e, _Bound):
        return _built(e.value, e.scope, depth + 1)
    if isinstance(e, ast.Name) and id(e) in scope.rebound:  # `x = torch.cat(x); x = x.to(device)`: that value
        return _built(scope.rebound[id(e)], scope, depth + 1)
    if isinstance(
        e, (ast.Compare, ast.BinOp)
    ):  # `(labels[:, None] == labels[None, :]).float()`: stays on the host
        sides = [e.left, *e.comparators] if isinstance(e, ast.Compare) else [e.left, e.right]
        tensors = [x for x in sides if not isinstance(x, ast.Constant)]
        return bool(tensors) and all(_built(x, scope, depth + 1) for x in tensors)
    if isinstance(e, ast.Name):
        if e.id in scope.fixed or e.id not in scope.values:
            return False  # a parameter, a loop variable (a batch), or a name of an outer scope
        values = [(v, i) for v, i in scope.values[e.id] if not isinstance(v, (ast.List, ast.ListComp))]
        # `x = x.cuda()`, `x = Variable(x)` keep x's origin (`x = torch.cat(x)` alone is an origin itself)
        values = [(v, i) for v, i in values if not self_derived(v, e.id)] or values
        return bool(values) and all(_built_part(v, i, scope, depth + 1) for v, i in values)
    if not isinstance(e, ast.Call):
        return False
    name = dotted(e.func)
    if "()" not in name and name.startswith(("torch.", "th.")) and kw(e, "device") is None:
        return name.rsplit(".", 1)[-1] not in ("load", "pin_memory")
    if isinstance(e.func, ast.Attribute) and e.func.attr in _BUILT_KEEPS:
        return _built(e.func.value, scope, depth + 1)
    return False


def _built_part(value: ast.expr, index: Optional[int], scope: Scope, depth: int) -> bool:
    """A name's bound value, or element `index` of a tuple returned by a function of the linted files."""
    if index is None:
        return _built(value, scope, depth)
    rets = scope._returns(value) if isinstance(value, ast.Call) else None
    if not rets:
        return False
    return all(
        isinstance(r.value, ast.Tuple)
        and index < len(r.value.elts)
        and _built(r.value.elts[index], r.scope, depth)
        for r in rets
    )


# methods that keep a tensor in the memory it was in (not `.pin_memory()`, not a copy to a device)
_BUILT_KEEPS = {"fill_", "long", "float", "int", "view", "reshape", "contiguous", "unsqueeze", "squeeze", "t"}
# in-place fills: `torch.FloatTensor(n, d).uniform_(0., 1.)`, `torch.zeros(n, c).scatter_(1, idx, 1)`
_BUILT_KEEPS |= {
    "uniform_",
    "normal_",
    "random_",
    "bernoulli_",
    "zero_",
    "scatter_",
    "half",
    "double",
    "bool",
}
# views and copies in the same memory: `torch.LongTensor(range(n)).unsqueeze(0).expand_as(x)`
_BUILT_KEEPS |= {"expand", "expand_as", "repeat", "permute", "transpose", "flatten", "clone"}


def _periodic(test: ast.expr) -> bool:
    return any(
        isinstance(n, ast.BinOp)
        and isinstance(n.op, ast.Mod)
        and not isinstance(n.left, (ast.Constant, ast.JoinedStr))
        for n in ast.walk(test)
    )


_COUNTER = re.compile(r"iter|step", re.IGNORECASE)


def _first_step(test: ast.expr) -> bool:
    """`if iteration == 0:` / `if self.global_step == 0:`: a step counter (not an epoch) compared with 0 holds on
    the first step only (a plot or log set up once), so its branch is not per-step code."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    for counter, zero in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
        name = dotted(counter).rsplit(".", 1)[-1]
        if (
            isinstance(zero, ast.Constant)
            and type(zero.value) is int
            and zero.value == 0
            and _COUNTER.search(name)
            and "epoch" not in name.lower()
        ):
            return True
    return False


def _one_shot(node: ast.If) -> bool:
    """`if self.need_sync: ...; self.need_sync = False`: a branch that turns its own flag off runs once."""
    flag = dotted(node.test)
    return bool(flag) and any(
        isinstance(st, ast.Assign)
        and any(dotted(t) == flag for t in st.targets)
        and isinstance(st.value, ast.Constant)
        and st.value.value in (False, None, 0)
        for st in node.body
    )


def _off_param(test: ast.expr, func: ast.AST, passed: frozenset[str]) -> bool:
    """`if is_report_accuracy:` on a parameter of this function defaulting to False/None that no call of the
    files read passes by name: an option nobody turns on (as `self.` flags in off_by_default)."""
    if not isinstance(test, ast.Name) or not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    a = func.args
    every = a.posonlyargs + a.args
    defaults = dict(zip([x.arg for x in every[len(every) - len(a.defaults) :]], a.defaults))
    defaults |= {x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None}
    rebound = any(
        isinstance(n, ast.Name) and n.id == test.id and isinstance(n.ctx, ast.Store) for n in ast.walk(func)
    )
    return test.id in defaults and test.id not in passed and not rebound and _off(test, defaults)


def _warns_only(body: list[ast.stmt]) -> bool:
    """A branch that only prints or logs a warning (`print(...)`, `logger.warning(...)`, `warnings.warn(...)`)."""
    return bool(body) and all(
        isinstance(st, ast.Expr)
        and isinstance(st.value, ast.Call)
        and (dotted(st.value.func) in ("print", "warnings.warn") or _is_log_call(dotted(st.value.func)))
        for st in body
    )


_EXITS = ("sys.exit", "exit", "quit", "os._exit", "os.abort")


def _exits(body: list[ast.stmt]) -> bool:
    """A branch whose last statement ends the program or leaves by an exception: it runs at most once."""
    last = body[-1] if body else None
    if isinstance(last, ast.Raise):
        return True
    return (
        isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) and dotted(last.value.func) in _EXITS
    )


def _is_log_call(name: str) -> bool:
    recv, _, method = name.rpartition(".")
    return method in ("debug", "info", "warning", "error", "log") and recv.rsplit(".", 1)[-1].lower() in (
        "log",
        "logger",
        "logging",
        "_log",
        "_logger",
    )


# Metric loggers that turn each value they are handed into a host number (timm/DeiT/ConvNeXt's MetricLogger and
# TensorboardLogger `.update()` call `.item()`, SummaryWriter's `add_scalar` copies to numpy, `wandb.log` converts
# tensors): named `*logger` / `*writer` or wandb. Not Lightning's `self.log` (it keeps the value on the device), not
# an `AverageMeter` (`losses.update(loss)` may keep a running sum on the device), not `accelerator.log`.
_TRACKER_METHODS = {"update", "log", "log_dict", "log_metrics", "add_scalar", "add_scalars", "add_histogram"}


def _is_tracker_call(name: str) -> bool:
    recv, _, method = name.rpartition(".")
    last = recv.rsplit(".", 1)[-1].lower().strip("_")
    return method in _TRACKER_METHODS and (last == "wandb" or last.endswith(("logger", "writer")))


_OPTIMIZER_CLASSES = {
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "Adamax",
    "NAdam",
    "RAdam",
    "ASGD",
    "Rprop",
}


def off_by_default(tree: ast.Module, passed: frozenset[str] = frozenset()) -> set[str]:
    """`self.x` flags of a module that are only ever set to False/None, or to a parameter whose default is
    False/None and that no call of the files read passes by name (`self.autobalance = autobalance`; `passed`: the
    keyword names those calls use): a branch under one is an option nobody turns on."""
    values: dict[str, list[bool]] = {}
    for f in ast.walk(tree):
        if not isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        a = f.args
        every = a.posonlyargs + a.args
        defaults = dict(zip([x.arg for x in every[len(every) - len(a.defaults) :]], a.defaults))
        defaults |= {x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None}
        defaults = {k: d for k, d in defaults.items() if k not in passed}
        for n in ast.walk(f):
            if not isinstance(n, (ast.Assign, ast.AnnAssign)) or n.value is None:
                continue
            for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                pairs = [(t, n.value)]  # `self.a, self.b = a, b` pairs element by element
                if (
                    isinstance(t, ast.Tuple)
                    and isinstance(n.value, ast.Tuple)
                    and len(t.elts) == len(n.value.elts)
                ):
                    pairs = list(zip(t.elts, n.value.elts))
                for target, v in pairs:
                    if dotted(target).startswith("self."):
                        values.setdefault(dotted(target), []).append(_off(v, defaults))
    return {k for k, offs in values.items() if all(offs)}


def _off(v: ast.expr, defaults: dict[str, ast.expr]) -> bool:
    """False/None, or a parameter defaulting to False/None."""
    v = defaults.get(v.id, v) if isinstance(v, ast.Name) else v
    return isinstance(v, ast.Constant) and v.value in (False, None)
