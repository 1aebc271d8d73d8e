"""Static rules: lines that make the GPU wait, found with `ast`, only where they run every step."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Optional, Union

from ._atdefault import false_at_default
from ._catalog import LintFinding
from ._checks import (
    _OPTIMIZER_CLASSES,
    _TRACKER_METHODS,
    _built,
    _collective,
    _exits,
    _first_step,
    _is_log_call,
    _is_tracker_call,
    _kept_in,
    _off_param,
    _one_shot,
    _periodic,
    _pinned_here,
    _warns_only,
    off_by_default,
)
from ._cpudefault import cpu_by_default
from ._draws import draws_and_steps
from ._facts import (
    Facts,
    _deep_stack,
    _device_like,
    _first_conv,
    _loaders,
    cpu_functions,
    file_facts,
)
from ._gates import every_step_mod, last_batch, other_phase, periodic_flag, throttled
from ._handed import handed_steps
from ._host import host_buffers
from ._hostargs import given_host, host_params, host_use, mark_host, passed_params
from ._model import PY, TENSOR, Func, Functions, Scope
from ._offflags import off_flag
from ._offpath import given_off, off_here, off_params
from ._options import modulo_option
from ._rare import converts_if_tensor, rare_test
from ._reducers import reduces_given
from ._refs import passed_functions
from ._steps import loop_body, reaches_step
from ._syntax import const, dotted, kw
from ._ticks import tick_gate
from ._timers import timer_reset
from ._view import project_name

_SYNC_METHODS = {"item": "IH001", "cpu": "IH002", "numpy": "IH003", "tolist": "IH004"}
_LEVELS = 4  # how far calls are followed from a training loop into functions of the same file


@dataclass(frozen=True)
class Via:
    """The call in a linted file that runs a helper of a module read only for the project view: what the helper
    does every step is reported at this call."""

    target: Checker
    call: ast.Call


# a function to check as per-step code, its depth, where it was called, its parameters given a tensor there
Pending = tuple[Func, int, Optional[Via], frozenset[str]]


class Checker(ast.NodeVisitor):
    """The rules over one file. `run()` checks it; calls into other files linted with it that run every step are
    left in `foreign` for those files' checkers (`pending` + `drain()`); `findings()` gives the result."""

    def __init__(
        self,
        file: str,
        source: str,
        tree: ast.Module,
        facts: Facts,
        funcs: Optional[Functions] = None,
        shared_gpu: bool = False,
        context: bool = False,
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
        self.foreign: list[Pending] = []
        self.context = context  # a module read for the project view: its findings go to the linted caller
        self.via: Optional[Via] = None  # the linted call the helper being checked was reached from
        self.model_build: Optional[tuple[ast.Call, str, bool]] = (
            None  # a model from a context module with convs
        )
        self.off_flags: Optional[set[str]] = None
        self.passed: frozenset[str] = frozenset()  # keyword names the calls of all files read use
        self.loops: list[bool] = []  # the loops around the code visited: is each a training loop?
        self.done: set[tuple[int, int, frozenset[str]]] = set()
        self.scope = Scope(tree, self.funcs)
        self.funcs.module = self.scope
        self.step = 0  # inside code that runs once per training step
        self.periodic = 0  # inside `if step % N == 0:` blocks
        self.level = 0  # how many calls away from a training loop this code is
        self.trains = False  # the file has a training loop
        self.pending: list[Pending] = []  # same-file functions called per step
        self.loaders = _loaders(tree)
        self.pinned_loader = facts.pinned
        # functions that run on the CPU in a file using the GPU elsewhere (not when a file linted with it shows
        # the GPU: its callers may be there)
        on_cpu = cpu_functions(tree) if self.gpu and not shared_gpu and not context else set()
        cpu = [f for f in tree.body if id(f) in on_cpu]  # (computed once: it walks the whole file)
        self.cpu_nodes = {id(n) for f in cpu for n in ast.walk(f)}
        self.cpu_loaders = {id(ld.call) for f in cpu for ld in self.loaders if _kept_in(ld, f)}
        self.on_cpu = 0  # inside such a function
        # methods of a class that is a metric writer (`class Tacotron2Logger(SummaryWriter)`): `self.add_scalar(t)`
        self.writer_methods = {
            id(m)
            for c in ast.walk(tree)
            if isinstance(c, ast.ClassDef)
            and any(dotted(b).endswith(("SummaryWriter", "Writer", "Logger")) for b in c.bases)
            for m in c.body
        }
        self.writer = False  # checking one of them
        self.host_buffers = host_buffers(tree)  # method -> `self.` buffers its class keeps on the host
        self.phase_tests: dict[int, list[ast.expr]] = {}  # function -> the `x == C` tests its steps are under

    def add(self, rule: str, node: ast.AST, via: str = "") -> None:
        line = getattr(node, "lineno", 0)
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        if self.context:  # reported at the linted file's call, naming this line
            if self.via is not None:
                callee = dotted(self.via.call.func) or "the helper"
                self.via.target.add(rule, self.via.call, f"via {callee}: {self.file}:{line} `{text}`")
            return
        if (
            not via and self.via is not None and self.via.target is not self
        ):  # a helper another linted file calls
            caller = self.via.target
            via = f"per step via {project_name(caller.file)}:{self.via.call.lineno} `{caller.text(self.via.call)}`"
        self.out.append(LintFinding(rule, self.file, line, getattr(node, "col_offset", 0), text, via))

    def text(self, node: ast.AST) -> str:
        line = getattr(node, "lineno", 0)
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""

    @property
    def per_step(self) -> bool:
        return bool(self.step) and not self.periodic

    def run(self) -> None:
        with _deep_stack(self.file):
            self.visit(self.tree)
            self._handed_steps()
            if self.gpu:
                for ld in self.loaders:
                    if ld.evaluation or ld.on_device or id(ld.call) in self.cpu_loaders:
                        continue
                    if ld.no_workers():
                        self.add("IH010", ld.call)
                    if ld.unpinned() and not ld.prepared:  # Accelerate copies the batches: its own setting
                        self.add("IH011", ld.call)
            conv = _first_conv(self.tree, self.trains) if self.gpu and not self.facts.benchmark else None
            if conv is not None:
                self.add("IH015", conv)
            elif self.gpu and not self.facts.benchmark and self.model_build is not None:
                call, via, trains_there = self.model_build  # a model trained here or by a project function
                if self.trains or trains_there:
                    self.add("IH015", call, via)
            self.drain()

    def _handed_steps(self) -> None:
        """`Engine(train_step)`: a step function a framework runs once per batch is per-step code."""
        for f in handed_steps(self.tree, self.funcs) if self.gpu else []:
            if id(f) not in self.cpu_nodes:
                self.trains = True
                self.pending.append((f, 1, None, frozenset()))

    def drain(self) -> None:
        """Functions called from a training loop run every step too: check their bodies as such."""
        with _deep_stack(self.file):
            self._drain()

    def _drain(self) -> None:
        while self.pending:
            f, level, via, tensors = self.pending.pop()
            # checked once per call site's tensor parameters (`count([1, 2])`, then `count(labels)`)
            key = (id(f), id(via.call) if via is not None and self.context else 0, tensors)
            if key in self.done or level > _LEVELS:
                continue
            if id(f) not in self.own:
                self.foreign.append((f, level, via, tensors))
                continue
            self.done.add(key)
            self.level, self.step, self.via, outer = level, 1, via, self.scope
            self.scope = Scope(f, self.funcs, self.funcs.module)
            for p in tensors:  # `logger.log(grad_norm)`: the parameter holds the tensor passed every step
                self.scope.fixed[p] = [TENSOR]
            given_host(self.scope, tensors)  # `log(loss.cpu())`: a host copy, no wait
            given_off(self.scope, tensors)
            self.writer = id(f) in self.writer_methods
            self._visit_gated(f.body)  # after `if steps % every: return`, once every N steps
            self.scope, self.step, self.via, self.writer = outer, 0, None, False

    def enter(self, f: Func, via: Via) -> None:
        """A function of this context module called from a linted file (`train_one_epoch(...)` in main.py): its
        training loops are checked here and reported at that call."""
        key = (id(f), id(via.call), frozenset[str]())
        if key in self.done:
            return
        self.done.add(key)
        with _deep_stack(self.file):
            self.via, self.level, self.step = via, 0, 0
            self.visit(f)
            self._drain()
            self.via = None

    def findings(self) -> list[LintFinding]:
        return _suppressed(self.out, self.lines)

    # ---- scopes and loops
    def _function(self, node: Func) -> None:
        outer, self.scope = self.scope, Scope(node, self.funcs, self.scope)
        cpu = id(node) in self.cpu_nodes
        self.on_cpu += cpu
        self.generic_visit(node)
        self.on_cpu -= cpu
        self.scope = outer

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def _loop(self, node: Union[ast.For, ast.AsyncFor, ast.While]) -> None:
        training = self.gpu and not self.on_cpu and reaches_step(loop_body(node), self.funcs, self.scope)
        # `while True: x = next(train_iter); ...; for phase in phases: phase.opt.step()`: one step per pass
        training = training or self.gpu and not self.on_cpu and draws_and_steps(node, self.funcs, self.scope)
        self.trains = self.trains or training
        self.step += training
        self.loops.append(training)
        if isinstance(node, ast.While) and self.per_step and self.scope.kind(node.test) == TENSOR:
            self.add("IH007", node)
        self._loop_fields(node)
        self.loops.pop()
        self.step -= training

    visit_For = visit_While = visit_AsyncFor = _loop

    def _visit_gated(self, body: list[ast.stmt]) -> None:
        """A function's body; after `if steps % every: return`, once every N steps."""
        cut = tick_gate(body)
        self._visit_marked(body, body[cut:] if cut is not None else [])

    def _loop_fields(self, node: Union[ast.For, ast.AsyncFor, ast.While]) -> None:
        """Visit the loop; after `if cur < tick_start + n: continue` (`tick_start` rebound below), once per tick."""
        cut = tick_gate(node.body)
        self._visit_marked(list(ast.iter_child_nodes(node)), node.body[cut:] if cut is not None else [])

    def _visit_marked(self, nodes: Sequence[ast.AST], rare: Sequence[ast.AST]) -> None:
        """Visit nodes in order, those in `rare` as not per step."""
        marked = {id(n) for n in rare}
        for n in nodes:
            here = id(n) in marked
            self.periodic += here
            self.visit(n)
            self.periodic -= here

    def visit_If(self, node: ast.If) -> None:
        checked = self.per_step and self.scope.kind(node.test) == TENSOR
        if checked:
            self.add("IH007", node)
        self._visit_test(node.test)
        # `if step % 100 == 0:` runs rarely, and a branch that ends the program (`sys.exit(1)`, `raise`) at most
        # once: a sync or print inside it costs nothing worth reporting.
        # an option off by default (`if self.autobalance:`, a flag only ever False/None) is not taken every step
        optional = dotted(node.test).startswith("self.") and dotted(node.test) in self._off_flags()
        # `if is_report_accuracy:` (a parameter off by default nobody passes); `if self.need_sync: ...;
        # self.need_sync = False` (turns itself off: runs once)
        optional = optional or _off_param(node.test, self.scope.node, self.passed) or _one_shot(node)
        # `if opts.l2_lambda_crop > 0:` (an option declared with default 0), `if ... and batch_idx == 0:`
        optional = optional or rare_test(node.test, self.funcs.off_options) or timer_reset(node, self.scope)
        # `if profile:` (left False by the caller); `if isinstance(v, torch.Tensor): v = v.item()` (numbers come)
        optional = optional or off_here(node.test, self.scope) or converts_if_tensor(node.test, self.scope)
        # `if args.batch_chunk > 1:` declared 1, `elif opt.distill == "abound":` declared "kd": not the default run
        optional = optional or false_at_default(node.test, self.funcs.option_defaults)
        # `if args.perform_rl_step:` declared `store_true`: a switch the default run leaves off
        optional = optional or off_flag(node, self.funcs.option_defaults)
        # `if not torch.isfinite(norm): print(...)`: the check is the wait (IH007); a branch that only warns runs
        # when the check fails, not every step
        warning = checked and _warns_only(node.body)
        # `if step % N == 0:`, `if is_metric_step:` (a flag computed from one), a timer that resets itself; not
        # `iter_num % log_interval` with `log_interval = 1` (every step)
        periodic = (
            (periodic_flag(node.test, self.scope) and not self._every_step(node.test))
            or throttled(node)
            or last_batch(node.test)
            or optional
            or self._periodic_call(node.test)
            or _first_step(node.test)
            or warning
        )
        # `elif phase == VAL:` in a function that steps only under `if phase == TRAIN:` (no step in that call)
        body_phase, else_phase = (
            other_phase(node, self.scope, self.phase_tests) if self.per_step else (False, False)
        )
        # a module's forward: `if self.training: ... else:` (the else branch is the evaluation pass)
        evaluating = dotted(node.test) == "self.training"
        for body, rare_branch in (
            (node.body, periodic or body_phase),
            (node.orelse, else_phase or evaluating),
        ):
            # a branch that leaves the training loop (`...; break`) runs once
            leaves = bool(body) and isinstance(body[-1], ast.Break) and bool(self.loops) and self.loops[-1]
            rare = rare_branch or _exits(body) or leaves
            self.periodic += rare
            for child in body:
                self.visit(child)
            self.periodic -= rare

    def _every_step(self, test: ast.expr) -> bool:
        """`% log_interval` with `log_interval = 1`, or `% args.accumulation_steps` declared with default 1."""
        ones = modulo_option(test)
        return every_step_mod(test, self.scope) or bool(ones) and set(ones) <= self.funcs.one_options

    def _periodic_call(self, test: ast.expr) -> bool:
        """`if divisible_by(step, N):` where the function of the linted files returns `a % b == 0`."""
        calls = [n for n in ast.walk(test) if isinstance(n, ast.Call)]
        return any(
            isinstance(r, ast.Return) and r.value is not None and _periodic(r.value)
            for c in calls
            for f in self.funcs.resolve(c, self.scope)
            for r in ast.walk(f)
        )

    def _off_flags(self) -> set[str]:
        if self.off_flags is None:
            self.off_flags = off_by_default(self.tree, self.passed)
        return self.off_flags

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
            # the linted call a chain of helpers started from in another file (or in a module read for the view)
            foreign = self.via is not None and self.via.target is not self
            via = self.via if self.context or foreign else Via(self, node)
            if not _collective(
                dotted(f)
            ):  # a collective helper is reported as one (IH016), not for its insides
                self.pending += [
                    (fn, self.level + 1, via, self._params_given(fn, node))
                    for fn in self.funcs.resolve(node, self.scope)
                ] + [
                    (fn, self.level + 1, via, frozenset())
                    for fn in passed_functions(node, self.funcs, self.scope)
                ]
        if not self.level:
            self._anywhere(node, dotted(f), attr)
        self.generic_visit(node)

    def _params_given(self, fn: Func, call: ast.Call) -> frozenset[str]:
        """The parameters given a tensor, and (marked) those given a host copy (`log(loss.cpu())`)."""
        given = mark_host(self._tensor_params(fn, call), host_params(fn, call, self.scope))
        return given | off_params(fn, call, self.scope)  # `profile=False` left off on the way

    def _tensor_params(self, fn: Func, call: ast.Call) -> frozenset[str]:
        """The parameters of `fn` this call passes a tensor."""
        return passed_params(fn, call, lambda a: self.scope.kind(a) == TENSOR)

    def _per_step(self, node: ast.Call, name: str, attr: str) -> None:
        f = node.func
        if attr in _SYNC_METHODS and not node.args and isinstance(f, ast.Attribute):
            recv = f.value
            # `.cpu().numpy()` / `.cpu().item()` wait once, at the copy: counted once, as IH002
            after_cpu = _after_cpu(recv)
            # `self.steps.item()` of a buffer its class registered on the host (`torch.tensor(0)`) and never moves
            counter = dotted(recv) in self.host_buffers.get(id(self.scope.node), ())
            host = counter or host_use(recv, self.scope)
            if self.scope.kind(recv) != PY and not after_cpu and not host:
                self.add(_SYNC_METHODS[attr], node)
        elif name.endswith(("cuda.synchronize", "accelerator.synchronize")):
            self.add("IH008", node)
        elif name.endswith("empty_cache"):
            self.add("IH009", node)
        elif _collective(name) or not self.level and self._reduces_step_values(node):
            self.add("IH016", node)
        elif self._prints_tensor(node, name, attr):
            self.add("IH005", node)
        elif name in ("float", "int", "bool") and node.args and self.scope.kind(node.args[0]) == TENSOR:
            self.add("IH006", node)
        elif self._blocking_copy(node, attr) and (
            _pinned_here(node) or (self.pinned_loader and not self._host_built(node))
        ):
            self.add("IH012", node)

    def _reduces_step_values(self, node: ast.Call) -> bool:
        """The loop's own code hands the step's values to a project function that all-reduces or gathers them and
        returns them (`du.all_reduce([loss, top1])`); a reduction inside the model (a VQ codebook's statistics)
        is part of the computation."""
        return any(reduces_given(fn) for fn in self.funcs.resolve(node, self.scope))

    def _prints_tensor(self, node: ast.Call, name: str, attr: str) -> bool:
        if name == "print" or _is_log_call(name):
            return any(self._shows_tensor(a) for a in node.args)
        own = (
            self.writer and name.startswith("self.") and attr in _TRACKER_METHODS
        )  # a SummaryWriter subclass
        if own or _is_tracker_call(
            name
        ):  # metric_logger.update(acc=t), writer.add_scalar("acc", t), wandb.log({..})
            return any(self._logs_tensor(a) for a in [*node.args, *(k.value for k in node.keywords)])
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
        if attr == "to" and not node.args:  # `.to(device=device, dtype=torch.float32)`
            target = kw(node, "device")
            return target is not None and _device_like(target)
        return (
            attr == "to"
            and bool(node.args)
            and _device_like(node.args[0])
            and not (len(node.args) > 1 and const(node.args[1]) is True)
        )

    def _host_built(self, node: ast.Call) -> bool:
        """The copied tensor was built on the host in this step (`torch.cat(...)` of batches, `torch.LongTensor(
        labels)`), not taken from a loader's batch: it is in pageable memory, so `non_blocking` would not overlap
        its copy (pinning it is the fix, not IH012's)."""
        recv = node.func.value if isinstance(node.func, ast.Attribute) else node
        return _built(recv, self.scope, 0)

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
            return any(
                self.scope.kind(v.value if isinstance(v, ast.Starred) else v) == TENSOR  # "%g %g" % (*pair,)
                for v in (values if values is not None else [arg.right])
            )
        if isinstance(arg, ast.Starred):  # print(*stats)
            return any(self.scope.kind(v) == TENSOR for v in self._items(arg.value) or [])
        return self.scope.kind(arg) == TENSOR

    def _logs_tensor(self, arg: ast.expr) -> bool:
        """A value handed to a metric logger holds a tensor: itself, in a container or `dict(k=t)`."""
        if isinstance(arg, ast.Call) and dotted(arg.func) == "dict":
            return any(self._shows_tensor(v) for v in [*arg.args, *(k.value for k in arg.keywords)])
        return self._shows_tensor(arg)

    def _text(self, e: ast.expr) -> bool:
        """A format string: a literal, `"a" + "b"`, or a name only ever bound to a string literal (`FMT`)."""
        if isinstance(e, (ast.Constant, ast.JoinedStr)):
            return isinstance(e, ast.JoinedStr) or isinstance(e.value, str)
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Mult)):  # "%s" + "%g", "%11s" * 2
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
        # reported at the argument to change (`foreach=False` on its own line of a long call)
        if attr == "zero_grad" and const(kw(node, "set_to_none")) is False:
            self.add("IH013", _keyword(node, "set_to_none"))
        elif (
            name.rsplit(".", 1)[-1] in _OPTIMIZER_CLASSES
            and const(kw(node, "foreach")) is False
            and const(kw(node, "fused")) is not True
        ):
            self.add("IH014", _keyword(node, "foreach"))


def check_tree(
    tree: ast.Module,
    source: str,
    file: str,
    shared: Optional[Facts] = None,
    own: Optional[Facts] = None,
    funcs: Optional[Functions] = None,
    context: bool = False,
    model_build: Optional[tuple[ast.Call, str, bool]] = None,
    passed: frozenset[str] = frozenset(),
) -> Checker:
    """The checker of one parsed file, run; `shared` adds what the files it imports, or that import it, show. A
    context module (read for the project view) is not run: only the helpers linted files call are checked."""
    facts = own if own is not None else file_facts(tree, file)
    facts = facts | shared if shared is not None else facts
    if facts.gpu and cpu_by_default(tree):  # `--device` defaults to "cpu": the GPU is an option here
        facts = replace(facts, gpu=False)
    c = Checker(file, source, tree, facts, funcs, shared is not None and shared.gpu, context)
    c.model_build, c.passed = model_build, passed
    if not context:
        c.run()
    return c


def _keyword(call: ast.Call, name: str) -> ast.AST:
    return next((k for k in call.keywords if k.arg == name), call)


def _after_cpu(recv: ast.expr) -> bool:
    """`x.cpu()`, also through `.data` / `.detach()` after it (`.cpu().data.numpy()`): the copy already waited."""
    while True:
        if isinstance(recv, ast.Attribute) and recv.attr == "data":
            recv = recv.value
        elif (
            isinstance(recv, ast.Call) and isinstance(recv.func, ast.Attribute) and recv.func.attr == "detach"
        ):
            recv = recv.func.value
        else:
            break
    return isinstance(recv, ast.Call) and dotted(recv.func).endswith(".cpu")


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
