"""Static rules: lines that make the GPU wait, found with `ast`, only where they run every step."""

from __future__ import annotations

import ast
import contextlib
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Optional

from ..errors import IdlehoundError
from ._model import (
    PY,
    TENSOR,
    Func,
    Functions,
    Scope,
    const,
    dotted,
    kw,
    loop_body,
    reaches_step,
    resolve_kwargs,
)


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    why: str
    fix: str


RULES: dict[str, Rule] = {
    r.id: r
    for r in [
        Rule(
            "IH001",
            "item-in-loop",
            "`.item()` copies a GPU value to the host and waits for all queued GPU work",
            "keep the value on the GPU (`total += loss.detach()`) and call .item() every N steps",
        ),
        Rule(
            "IH002",
            "cpu-in-loop",
            "`.cpu()` copies a GPU tensor to the host and waits for the GPU",
            "copy only every N steps, or into pinned memory with non_blocking=True",
        ),
        Rule(
            "IH003",
            "numpy-in-loop",
            "`.numpy()` needs the tensor on the host: a blocking copy from the GPU",
            "keep the computation in torch on the GPU; convert every N steps",
        ),
        Rule(
            "IH004",
            "tolist-in-loop",
            "`.tolist()` copies a GPU tensor to the host and waits for the GPU",
            "keep the values on the GPU; convert every N steps",
        ),
        Rule(
            "IH005",
            "print-tensor",
            "printing or formatting a tensor reads its values on the host (several syncs)",
            'print a Python number every N steps: `print(f"{loss.item():.4f}")` inside `if step % 100 == 0`',
        ),
        Rule(
            "IH006",
            "float-int-of-tensor",
            "`float(t)` / `int(t)` of a tensor is a hidden `.item()`: a sync",
            "keep it as a tensor, or read it every N steps",
        ),
        Rule(
            "IH007",
            "tensor-condition",
            "a tensor in an `if`/`while` condition must be read on the host: a sync",
            "decide on the GPU (`torch.where`) or check every N steps",
        ),
        Rule(
            "IH008",
            "synchronize-in-loop",
            "`torch.cuda.synchronize()` waits for all GPU work every step",
            "remove it; time with CUDA events (torch.cuda.Event) if that is what it was for",
        ),
        Rule(
            "IH009",
            "empty-cache-in-loop",
            "`torch.cuda.empty_cache()` returns cached memory, so the next step "
            "must cudaMalloc again (and cudaFree synchronizes)",
            "remove it from the loop",
        ),
        Rule(
            "IH010",
            "dataloader-no-workers",
            "a DataLoader without `num_workers` loads every batch in the training "
            "process while the GPU waits",  # N: the count diagnose.dataloader.suggested_workers() gives
            "DataLoader(..., num_workers=N, persistent_workers=True), N = half the cores, 2 to 16",
        ),
        Rule(
            "IH011",
            "dataloader-no-pin-memory",
            "without `pin_memory=True` host-to-device copies come from pageable "
            "memory: slower, and they block the host",
            "DataLoader(..., pin_memory=True) and .to(device, non_blocking=True)",
        ),
        Rule(
            "IH012",
            "blocking-to",
            "`.to(device)` without `non_blocking=True` after a pinned loader blocks the host "
            "until the copy is done",
            "x = x.to(device, non_blocking=True)",
        ),
        Rule(
            "IH013",
            "zero-grad-not-none",
            "`zero_grad(set_to_none=False)` launches a memset kernel per parameter",
            "opt.zero_grad(set_to_none=True) (the default)",
        ),
        Rule(
            "IH014",
            "optimizer-not-fused",
            "`foreach=False` makes this optimizer launch small kernels per parameter "
            "and op (the default on CUDA is the multi-tensor path)",
            "drop foreach=False, or pass fused=True",
        ),
        Rule(
            "IH015",
            "cudnn-benchmark-off",
            "convolutions without `torch.backends.cudnn.benchmark = True` use cuDNN's "
            "heuristic algorithm instead of the fastest for your shapes",
            "torch.backends.cudnn.benchmark = True",
        ),
        Rule(
            "IH016",
            "collective-in-loop",
            "`accelerator.wait_for_everyone()` / `dist.barrier()` / `accelerator.gather(...)` / `.reduce(...)` / "
            "`.check_trigger()` every step makes "
            "every process wait for the slowest one, and a gather copies every rank's tensor each step",
            "gather and wait once per epoch or every N steps; keep per-step values on the device "
            "(`total += loss.detach()`)",
        ),
    ]
}


@dataclass
class LintFinding:
    rule: str
    file: str
    line: int
    col: int
    text: str

    @property
    def info(self) -> Rule:
        return RULES[self.rule]

    def to_json(self) -> dict:
        r = self.info
        return {
            "rule": self.rule,
            "name": r.name,
            "file": self.file,
            "line": self.line,
            "col": self.col,
            "code": self.text,
            "why": r.why,
            "fix": r.fix,
        }


_SYNC_METHODS = {"item": "IH001", "cpu": "IH002", "numpy": "IH003", "tolist": "IH004"}
_DEVICE_WORDS = ("device", "gpu", "rank", "cuda")
_LEVELS = 2  # how far calls are followed from a training loop into functions of the same file


def _device_like(e: ast.expr) -> bool:
    if isinstance(e, ast.Constant) and isinstance(e.value, str):
        return e.value.startswith("cuda")
    if isinstance(e, ast.Call) and dotted(e.func) == "torch.device":
        return not (e.args and const(e.args[0]) == "cpu")
    name = dotted(e).lower()
    return any(w in name for w in _DEVICE_WORDS)


def gpu_evidence(tree: ast.Module) -> bool:
    """Whether the file runs on an accelerator: `cuda`, `torch.accelerator`, `nccl`, or tensors moved to a
    device variable (device-agnostic scripts pick the GPU when there is one)."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and n.attr in ("cuda", "accelerator"):
            return True
        if isinstance(n, ast.Call) and _accelerate_call(n):
            return True  # Accelerate puts the model and the batches on the GPU it finds
        if (
            isinstance(n, ast.Constant)
            and isinstance(n.value, str)
            and (n.value.startswith("cuda") or n.value == "nccl")
        ):
            return True
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "to"
            and n.args
            and _device_like(n.args[0])
        ):
            return True
        if (
            isinstance(n, ast.keyword)
            and n.arg == "device"
            and const(n.value) != "cpu"
            and _device_like(n.value)
        ):
            return True
    return False


def _accelerate_call(n: ast.Call) -> bool:
    """`Accelerator(...)`, `accelerator.backward(loss)`, `accelerator.prepare(...)`."""
    name = dotted(n.func)
    recv, _, method = name.rpartition(".")
    return name.rsplit(".", 1)[-1] == "Accelerator" or (
        "accelerator" in recv.lower() and method in ("backward", "prepare")
    )


def _prepares(n: ast.Call) -> bool:
    """`accelerator.prepare(...)` or Lightning's `fabric.setup_dataloaders(...)`."""
    recv, _, method = dotted(n.func).rpartition(".")
    return (_accelerate_call(n) and method == "prepare") or (
        "fabric" in recv.lower() and method == "setup_dataloaders"
    )


def _prepared_names(tree: ast.Module) -> set[str]:
    """Names passed to `accelerator.prepare(...)` / `fabric.setup_dataloaders(...)`: those loaders copy their
    batches to the device themselves (a `.to(device)` on them is a no-op, pinning is the framework's setting)."""
    return {
        a.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and _prepares(n)
        for a in n.args
        if isinstance(a, ast.Name)
    }


_EVAL_WORDS = re.compile(
    r"(^|_)(val|valid|validation|eval|evaluation|test|testing|dev)(_|$|loader|dl|iter)", re.I
)

_EVAL_FUNC = re.compile(
    r"(^|_)(eval|evaluate|evaluation|val|valid|validate|validation|test|testing)(_|$)", re.I
)


def _with_scopes(tree: ast.Module) -> Iterator[tuple[ast.AST, tuple[ast.AST, ...]]]:
    """Every node with the chain of module and functions that encloses it (iteratively: no recursion limit)."""
    stack: list[tuple[ast.AST, tuple[ast.AST, ...]]] = [(tree, (tree,))]
    while stack:
        node, chain = stack.pop()
        yield node, chain
        sub = chain + (node,) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else chain
        stack += [(c, sub) for c in ast.iter_child_nodes(node)]


class _Loader:
    """What a DataLoader(...) call passes for num_workers and pin_memory, reading `**kwargs` dicts."""

    def __init__(self, call: ast.Call, chain: tuple[ast.AST, ...]) -> None:
        self.call = call
        self.names: list[str] = []  # the names it is assigned to
        self.prepared = False  # passed to accelerator.prepare(...)
        self.on_device = False  # its dataset returns tensors already on the device
        # a validation/test loader beside the training one, or built in an evaluation function (`eval_split`)
        self.evaluation = any(
            isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and _EVAL_FUNC.search(f.name)
            for f in chain
        )
        self.known = not any(isinstance(a, ast.Starred) for a in call.args)
        self.keys: dict[str, list[ast.expr]] = {}
        for k in call.keywords:
            sub = {k.arg: [k.value]} if k.arg else resolve_kwargs(k.value, list(chain))
            if sub is None:
                self.known = False
                break
            for name, values in sub.items():
                self.keys.setdefault(name, []).extend(values)
        if len(call.args) > 5:
            self.keys.setdefault("num_workers", []).append(call.args[5])
        if len(call.args) > 7:
            self.keys.setdefault("pin_memory", []).append(call.args[7])

    def no_workers(self) -> bool:
        values = self.keys.get("num_workers")
        return self.known and (
            values is None or all(const(v) == 0 and isinstance(v, ast.Constant) for v in values)
        )

    def unpinned(self) -> bool:
        values = self.keys.get("pin_memory")
        return self.known and (values is None or all(const(v) is False for v in values))

    def pinned(self) -> bool:
        return not self.prepared and any(const(v) is not False for v in self.keys.get("pin_memory", []))


@dataclass(frozen=True)
class Facts:
    """What one file shows about the program: run on a GPU, a loader pinning memory, cudnn.benchmark set."""

    gpu: bool
    pinned: bool
    benchmark: bool

    def __or__(self, other: Facts) -> Facts:
        return Facts(self.gpu or other.gpu, self.pinned or other.pinned, self.benchmark or other.benchmark)


def _device_dataset(cls: ast.ClassDef) -> bool:
    """A Dataset class whose __getitem__ returns a tensor already moved to a device (`.cuda()`, `.to(device)`): a
    loader of it can neither use worker processes (CUDA in forked workers) nor pin memory."""
    return any(
        isinstance(f, ast.FunctionDef)
        and f.name == "__getitem__"
        and any(
            isinstance(r, ast.Return) and isinstance(r.value, ast.Call) and _to_device(r.value)
            for r in ast.walk(f)
        )
        for f in cls.body
    )


def _to_device(call: ast.Call) -> bool:
    f = call.func
    if not isinstance(f, ast.Attribute):
        return False
    return f.attr == "cuda" or (f.attr == "to" and bool(call.args) and _device_like(call.args[0]))


def _dataset_class(call: ast.Call, made: dict[str, set[str]]) -> str:
    """The class of the dataset a DataLoader(...) call is given: `Cls(...)` itself or a name bound only to one."""
    ds = call.args[0] if call.args else kw(call, "dataset")
    if isinstance(ds, ast.Call):
        return dotted(ds.func)
    callees = made.get(ds.id, set()) if isinstance(ds, ast.Name) else set()
    return next(iter(callees)) if len(callees) == 1 else ""


def _loaders(tree: ast.Module) -> list[_Loader]:
    found = [
        _Loader(n, c)
        for n, c in _with_scopes(tree)
        if isinstance(n, ast.Call) and dotted(n.func).rsplit(".", 1)[-1] == "DataLoader"
    ]
    by_call = {id(ld.call): ld for ld in found}
    made: dict[str, set[str]] = {}  # name -> the callees assigned to it (`train_set = TextDataset(...)`)
    on_device: set[str] = set()
    for n in ast.walk(tree) if found else ():  # the name each loader is kept under
        if isinstance(n, ast.Assign) and id(n.value) in by_call:
            by_call[id(n.value)].names = [dotted(t) for t in n.targets]
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    made.setdefault(t.id, set()).add(dotted(n.value.func))
        if isinstance(n, ast.ClassDef) and _device_dataset(n):
            on_device.add(n.name)
    prepared = _prepared_names(tree)
    for ld in found:
        ld.prepared = any(name in prepared for name in ld.names)
        ld.on_device = _dataset_class(ld.call, made) in on_device
    if len(found) > 1:  # a validation/test loader beside a training one: its epoch pass is not the training
        for ld in found:
            ld.evaluation = ld.evaluation or (
                bool(ld.names) and all(_EVAL_WORDS.search(n.rsplit(".", 1)[-1]) for n in ld.names)
            )
    return found


class Checker(ast.NodeVisitor):
    """The rules over one file. `run()` checks it; calls into other files linted with it that run every step are
    left in `foreign` for those files' checkers (`pending` + `drain()`); `findings()` gives the result."""

    def __init__(
        self, file: str, source: str, tree: ast.Module, facts: Facts, funcs: Optional[Functions] = None
    ) -> None:
        self.file, self.lines, self.gpu, self.tree, self.facts = (
            file,
            source.splitlines(),
            facts.gpu,
            tree,
            facts,
        )
        self.out: list[LintFinding] = []
        self.funcs = funcs or Functions(tree)
        self.own = {id(n) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.foreign: list[tuple[Func, int]] = []
        self.done: set[int] = set()
        self.scope = Scope(tree, self.funcs)
        self.funcs.module = self.scope
        self.step = 0  # inside code that runs once per training step
        self.periodic = 0  # inside `if step % N == 0:` blocks
        self.level = 0  # how many calls away from a training loop this code is
        self.pending: list[tuple[Func, int]] = []  # same-file functions called per step
        self.loaders = _loaders(tree)
        self.pinned_loader = facts.pinned

    def add(self, rule: str, node: ast.AST) -> None:
        line = getattr(node, "lineno", 0)
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        self.out.append(LintFinding(rule, self.file, line, getattr(node, "col_offset", 0), text))

    @property
    def per_step(self) -> bool:
        return bool(self.step) and not self.periodic

    def run(self) -> None:
        with _deep_stack(self.file):
            self.visit(self.tree)
            if self.gpu:
                for ld in self.loaders:
                    if ld.evaluation or ld.on_device:
                        continue
                    if ld.no_workers():
                        self.add("IH010", ld.call)
                    if ld.unpinned() and not ld.prepared:  # Accelerate copies the batches: its own setting
                        self.add("IH011", ld.call)
            conv = _first_conv(self.tree) if self.gpu and not self.facts.benchmark else None
            if conv is not None:
                self.add("IH015", conv)
            self.drain()

    def drain(self) -> None:
        """Functions called from a training loop run every step too: check their bodies as such."""
        with _deep_stack(self.file):
            self._drain()

    def _drain(self) -> None:
        while self.pending:
            f, level = self.pending.pop()
            if id(f) in self.done or level > _LEVELS:
                continue
            if id(f) not in self.own:
                self.foreign.append((f, level))
                continue
            self.done.add(id(f))
            self.level, self.step, outer = level, 1, self.scope
            self.scope = Scope(f, self.funcs, self.funcs.module)
            for stmt in f.body:
                self.visit(stmt)
            self.scope, self.step = outer, 0

    def findings(self) -> list[LintFinding]:
        return _suppressed(self.out, self.lines)

    # ---- scopes and loops
    def _function(self, node: Func) -> None:
        outer, self.scope = self.scope, Scope(node, self.funcs, self.scope)
        self.generic_visit(node)
        self.scope = outer

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def _loop(self, node) -> None:
        training = self.gpu and reaches_step(loop_body(node), self.funcs, self.scope)
        self.step += training
        if isinstance(node, ast.While) and self.per_step and self.scope.kind(node.test) == TENSOR:
            self.add("IH007", node)
        self.generic_visit(node)
        self.step -= training

    visit_For = visit_While = visit_AsyncFor = _loop

    def visit_If(self, node: ast.If) -> None:
        if self.per_step and self.scope.kind(node.test) == TENSOR:
            self.add("IH007", node)
        self._visit_test(node.test)
        # `if step % 100 == 0:` runs rarely: a sync or print inside it costs nothing worth reporting.
        periodic = _periodic(node.test)
        self.periodic += periodic
        for child in node.body:
            self.visit(child)
        self.periodic -= periodic
        for child in node.orelse:
            self.visit(child)

    def _visit_test(self, test: ast.expr) -> None:
        """`if step % 100 == 0 and loss.item() > x:` reads the loss only when the first part holds."""
        if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)):
            self.visit(test)
            return
        rare = 0
        for value in test.values:
            self.periodic += rare
            self.visit(value)
            self.periodic -= rare
            rare = rare or _periodic(value)

    def visit_Assert(self, node: ast.Assert) -> None:
        if self.per_step and self.scope.kind(node.test) == TENSOR:
            self.add("IH007", node)
        self.generic_visit(node)

    # ---- calls
    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        attr = f.attr if isinstance(f, ast.Attribute) else ""
        if self.per_step:
            self._per_step(node, dotted(f), attr)
            self.pending += [(fn, self.level + 1) for fn in self.funcs.resolve(node, self.scope)]
        if not self.level:
            self._anywhere(node, dotted(f), attr)
        self.generic_visit(node)

    def _per_step(self, node: ast.Call, name: str, attr: str) -> None:
        f = node.func
        if attr in _SYNC_METHODS and not node.args and isinstance(f, ast.Attribute):
            recv = f.value
            after_cpu = isinstance(recv, ast.Call) and dotted(recv.func).endswith(".cpu") and attr != "item"
            if self.scope.kind(recv) != PY and not after_cpu:
                self.add(_SYNC_METHODS[attr], node)
        elif name.endswith(("cuda.synchronize", "accelerator.synchronize")):
            self.add("IH008", node)
        elif name.endswith("empty_cache"):
            self.add("IH009", node)
        elif _collective(name):
            self.add("IH016", node)
        elif self._prints_tensor(node, name, attr):
            self.add("IH005", node)
        elif name in ("float", "int", "bool") and node.args and self.scope.kind(node.args[0]) == TENSOR:
            self.add("IH006", node)
        elif self.pinned_loader and self._blocking_copy(node, attr):
            self.add("IH012", node)

    def _prints_tensor(self, node: ast.Call, name: str, attr: str) -> bool:
        if name == "print" or _is_log_call(name):
            return any(self._shows_tensor(a) for a in node.args)
        if (
            attr == "format"
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Constant)
        ):
            return any(self._shows_tensor(a) for a in [*node.args, *(k.value for k in node.keywords)])
        return False

    @staticmethod
    def _blocking_copy(node: ast.Call, attr: str) -> bool:
        if const(kw(node, "non_blocking")) is True:
            return False
        if attr == "cuda":
            return not node.args or const(node.args[-1]) is not True
        return (
            attr == "to"
            and bool(node.args)
            and _device_like(node.args[0])
            and not (len(node.args) > 1 and const(node.args[1]) is True)
        )

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        if self.per_step and self._shows_tensor(node):
            self.add("IH005", node)
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if (
            self.per_step
            and isinstance(node.op, ast.Mod)
            and self._text(node.left)
            and self._shows_tensor(node)
        ):
            self.add("IH005", node)
        self.generic_visit(node)

    def _shows_tensor(self, arg: ast.expr) -> bool:
        """Formatting or printing this reads a tensor's values on the host."""
        if isinstance(arg, (ast.List, ast.Tuple, ast.Set)):
            return any(self._shows_tensor(e) for e in arg.elts)
        if isinstance(arg, ast.Dict):
            return any(self._shows_tensor(v) for v in arg.values)
        if isinstance(arg, ast.JoinedStr):
            return any(
                isinstance(v, ast.FormattedValue) and self.scope.kind(v.value) == TENSOR for v in arg.values
            )
        if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "format":
            return any(self.scope.kind(a) == TENSOR for a in [*arg.args, *(k.value for k in arg.keywords)])
        if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Mod) and self._text(arg.left):
            values = self._items(arg.right)
            return any(self.scope.kind(v) == TENSOR for v in (values if values is not None else [arg.right]))
        if isinstance(arg, ast.Starred):  # print(*stats)
            return any(self.scope.kind(v) == TENSOR for v in self._items(arg.value) or [])
        return self.scope.kind(arg) == TENSOR

    def _text(self, e: ast.expr) -> bool:
        """A format string: a literal, `"a" + "b"`, or a name only ever bound to a string literal (`FMT`)."""
        if isinstance(e, (ast.Constant, ast.JoinedStr)):
            return isinstance(e, ast.JoinedStr) or isinstance(e.value, str)
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
            return self._text(e.left) or self._text(e.right)
        if isinstance(e, ast.Name):
            values = self._bound(e.id)
            return bool(values) and all(
                isinstance(v, ast.Constant) and isinstance(v.value, str) for v in values
            )
        return False

    def _items(self, e: ast.expr) -> Optional[list[ast.expr]]:
        """The elements of a tuple or list, written there or bound to the name (`stats = (loss, acc)`)."""
        if isinstance(e, (ast.Tuple, ast.List)):
            return list(e.elts)
        if isinstance(e, ast.Name):
            values = self._bound(e.id)
            if values and all(isinstance(v, (ast.Tuple, ast.List)) for v in values):
                return [x for v in values for x in v.elts]  # type: ignore[attr-defined]
        return None

    def _bound(self, name: str) -> list[ast.expr]:
        """The whole values a name is assigned in the nearest scope that assigns it."""
        scope: Optional[Scope] = self.scope
        while scope is not None:
            if name in scope.values:
                return [v for v, index in scope.values[name] if index is None]
            scope = scope.parent
        return []

    def _anywhere(self, node: ast.Call, name: str, attr: str) -> None:
        if attr == "zero_grad" and const(kw(node, "set_to_none")) is False:
            self.add("IH013", node)
        elif (
            name.rsplit(".", 1)[-1] in _OPTIMIZER_CLASSES
            and const(kw(node, "foreach")) is False
            and const(kw(node, "fused")) is not True
        ):
            self.add("IH014", node)


# helpers that all-reduce a logged value (MAE's all_reduce_mean, DETR's reduce_dict, timm's reduce_tensor); not
# dist.all_reduce itself, which hand-written gradient averaging needs every step
_REDUCE_HELPER = re.compile(
    r"(^|_)reduce_(mean|sum|dict|loss_dict|tensor|tensors|value|values|loss|losses|scalar)$"
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


def _periodic(test: ast.expr) -> bool:
    return any(
        isinstance(n, ast.BinOp)
        and isinstance(n.op, ast.Mod)
        and not isinstance(n.left, (ast.Constant, ast.JoinedStr))
        for n in ast.walk(test)
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


_CONVS = ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")


def _vision_model_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Aliases of torchvision.models (`models`) and model builders imported from it (`resnet18`)."""
    modules, builders = {"torchvision.models"}, set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            modules |= {a.asname for a in n.names if a.name == "torchvision.models" and a.asname}
        elif isinstance(n, ast.ImportFrom) and n.module == "torchvision":
            modules |= {a.asname or a.name for a in n.names if a.name == "models"}
        elif isinstance(n, ast.ImportFrom) and (n.module or "").startswith("torchvision.models"):
            builders |= {a.asname or a.name for a in n.names}
    return modules, builders


def _first_conv(tree: ast.Module) -> Optional[ast.Call]:
    """The first convolution layer or torchvision model built in this file."""
    modules, builders = _vision_model_names(tree)
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        func = n.func.value if isinstance(n.func, ast.Subscript) else n.func  # models.__dict__[arch](...)
        name = dotted(func)
        if (
            name.endswith(_CONVS)
            or name in builders
            or name.rsplit(".", 1)[0] in modules
            or name.rsplit(".", 2)[0] in modules
        ):
            return n
    return None


def _benchmark_on(tree: ast.Module) -> bool:
    """Whether the file sets cudnn.benchmark to anything but a literal False (a flag counts as set)."""
    for n in ast.walk(tree):
        if (
            isinstance(n, ast.Assign)
            and any(dotted(t).endswith("cudnn.benchmark") for t in n.targets)
            and const(n.value) is not False
        ):
            return True
    return False


@contextlib.contextmanager
def _deep_stack(file: str) -> Iterator[None]:
    """Deep but valid expressions (the parser accepts a few thousand levels) need more than 1000 frames."""
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(max(limit, 20_000))
        yield
    except RecursionError:
        raise IdlehoundError(f"{file}: an expression is nested too deeply to lint") from None
    finally:
        sys.setrecursionlimit(limit)


def file_facts(tree: ast.Module, file: str) -> Facts:
    with _deep_stack(file):
        return Facts(gpu_evidence(tree), any(ld.pinned() for ld in _loaders(tree)), _benchmark_on(tree))


def check_tree(
    tree: ast.Module,
    source: str,
    file: str,
    shared: Optional[Facts] = None,
    own: Optional[Facts] = None,
    funcs: Optional[Functions] = None,
) -> Checker:
    """The checker of one parsed file, run; `shared` adds what the files it imports, or that import it, show."""
    facts = own if own is not None else file_facts(tree, file)
    facts = facts | shared if shared is not None else facts
    c = Checker(file, source, tree, facts, funcs)
    c.run()
    return c


def check_source(source: str, file: str) -> list[LintFinding]:
    from ._source import parse_source

    return check_tree(parse_source(source, file), source, file).findings()


def _suppressed(found: list[LintFinding], lines: list[str]) -> list[LintFinding]:
    """One finding per rule and line; drop those whose line says `# idlehound: ignore` or
    `# idlehound: ignore[IH001,...]`."""
    out, seen = [], set()
    for f in sorted(found, key=lambda f: (f.file, f.line, f.col, f.rule)):
        key = (f.rule, f.line)
        if key in seen:
            continue
        seen.add(key)
        line = lines[f.line - 1] if 0 < f.line <= len(lines) else ""
        tag = line.partition("# idlehound: ignore")[2] if "# idlehound: ignore" in line else None
        if tag is not None and (not tag.startswith("[") or f.rule in tag.split("]")[0]):
            continue
        out.append(f)
    return out
