"""A light static model of a training script: local functions, Python-vs-tensor kinds, training loops, kwargs dicts.

Everything here is an approximation that prefers silence: what cannot be resolved is "unknown", and rules only
fire on what is known.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Optional, Union

from ._annotated import annotated_class
from ._reach import builds_or_wraps, element_forwards, module_elements, module_factory_class, typed_call
from ._refs import partial_target, returned_functions
from ._syntax import bound_names, calls_of, dotted, kw, own_nodes, unwrapped
from ._vocab import (
    _LOADERS,
    _MODULE_NAMES,
    _OPTIMIZERS,
    _PY_ATTRS,
    _PY_BUILTINS,
    _PY_METHODS,
    _PY_MODULES,
    _SHARED_METHODS,
    _TENSOR_METHODS,
    _TORCH_ANY,
)

TENSOR, PY, UNKNOWN = "tensor", "py", "unknown"
Func = Union[ast.FunctionDef, ast.AsyncFunctionDef]


def join(kinds: Iterable[str]) -> str:
    """A tensor anywhere makes a tensor (`total = 0; total += loss`); all Python makes Python."""
    ks = set(kinds)
    if TENSOR in ks:
        return TENSOR
    return PY if ks == {PY} else UNKNOWN


class Functions:
    """The functions and methods defined in one file, by name, and those it imports from files linted with it
    (`imported`: name -> function or class; `modules`: alias -> that module's top-level definitions)."""

    def __init__(
        self,
        tree: ast.Module,
        imported: Optional[dict[str, ast.AST]] = None,
        modules: Optional[dict[str, dict[str, ast.AST]]] = None,
    ) -> None:
        self.plain: dict[str, list[Func]] = {}
        self.modules = {
            alias: {n: d for n, d in defs.items() if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))}
            for alias, defs in (modules or {}).items()
        }
        self.methods: dict[str, list[Func]] = {}
        self.scopes: dict[tuple[int, int], Scope] = {}
        self.module: Optional[Scope] = None  # parent scope of every function's (module globals)
        self.classes: dict[str, dict[str, Func]] = {}
        self.overrides: dict[str, list[Func]] = {}  # methods of subclasses in other files, by name
        self.off_options: frozenset[str] = frozenset()  # command-line options declared off by default
        self.one_options: frozenset[str] = frozenset()  # command-line options declared with default 1
        self.option_defaults: dict[str, object] = {}  # compared options' declared defaults (_atdefault.py)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.methods.setdefault(item.name, []).append(item)
                        self.classes.setdefault(node.name, {})[item.name] = item
        in_class = {id(f) for fs in self.methods.values() for f in fs}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) not in in_class:
                self.plain.setdefault(node.name, []).append(node)
        self.imported, self.module_defs = imported or {}, modules or {}
        self.tree = tree  # to find a function's callers (what they pass it)
        self.calls: dict[str, list[tuple[Optional[Func], ast.Call]]] = {}  # name -> its calls in the file
        own_methods = [f for fs in self.methods.values() for f in fs]
        for name, d in self.imported.items():
            if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.plain.setdefault(name, [d])
            elif isinstance(
                d, ast.ClassDef
            ):  # its methods call `self.m()` of their own class (or a base here)
                self.import_class(name, d)
        for alias, defs in self.module_defs.items():  # `import TD3` -> `TD3.TD3(...)`, known as "TD3.TD3"
            for name, d in defs.items():
                if isinstance(d, ast.ClassDef):
                    self.classes.setdefault(f"{alias}.{name}", _methods_of(d))
        self.attrs: dict[str, set[str]] = {}  # `self.x = Cls(...)` in any method: "self.x" -> the classes
        for n in (n for f in own_methods for n in ast.walk(f)):
            if isinstance(n, ast.Assign) and (built := _class_built(n.value, self, qualified=True)):
                for t in n.targets:  # also `self.policy = Policy(...).to(self.device)`
                    if dotted(t).startswith("self."):
                        self.attrs.setdefault(dotted(t), set()).add(built)
        # `self.blocks = nn.ModuleList([Block(...), ...])`: "self.blocks" -> the classes of its elements
        self.elements = module_elements(own_methods, lambda v: _class_built(v, self, qualified=True))

    def import_class(self, name: str, c: ast.ClassDef) -> None:
        """Know a class of another file by the name this file uses, and its methods for `self.m()` calls."""
        methods = _methods_of(c)
        self.classes.setdefault(name, methods)
        for m, i in methods.items():
            self.methods.setdefault(m, [i])

    def imported_defs(self, call: ast.Call) -> list[ast.AST]:
        """The class or function of another file this call runs: `Net(...)`, `models.Net(...)`."""
        f = call.func.value if isinstance(call.func, ast.Subscript) else call.func  # `DiT_models[name](...)`
        if isinstance(f, ast.Name) and f.id in self.imported:
            return [self.imported[f.id]]
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in self.module_defs:
            found = self.module_defs[f.value.id].get(f.attr)
            return [found] if found is not None else []
        return []

    def _called_instance(self, name: str, scope: Optional[Scope]) -> list[Func]:
        """`criterion(out, y)` where `criterion = YoloLoss(...)`, a class of the linted files: its forward()."""
        methods = self.classes.get(scope.instance_of(name), {}) if scope is not None else {}
        return [methods[m] for m in ("forward", "__call__") if m in methods][:1]

    def scope(self, f: Func, depth: int) -> Scope:
        key = (id(f), depth)
        if key not in self.scopes:
            self.scopes[key] = Scope(f, self, self.module, depth)
        return self.scopes[key]

    def resolve(self, call: ast.Call, scope: Optional[Scope] = None) -> list[Func]:
        """The same-file functions a call may run: `f()`, `self.m()`, and `obj.m()` where `obj = Cls(...)`."""
        f = call.func
        if isinstance(f, ast.Name):
            direct = self.plain.get(f.id, []) or self._called_instance(f.id, scope)
            target = partial_target(f.id, scope) if not direct else None  # `backwards = partial(f, fp16)`
            if target is not None:
                return self.resolve(ast.Call(func=target, args=[], keywords=[]))
            # `train = make_train_fn(...)`: the `train` nested in it
            return direct or returned_functions(f.id, self, scope) or element_forwards(self, f.id, scope)
        if not isinstance(f, ast.Attribute):
            return []
        if isinstance(f.value, ast.Name) and f.value.id in ("self", "cls"):
            own = self.methods.get(f.attr, []) + self.overrides.get(f.attr, [])
            return own or self._called_instance(dotted(f), scope)
        if isinstance(f.value, ast.Name) and f.value.id in self.modules:
            found = self.modules[f.value.id].get(f.attr)
            return [found] if found is not None else []
        if scope is not None and (alts := scope.alternatives(dotted(f.value))):
            # `policy = TD3(...)` or `DDPG(...)` by an option: the method of each may run
            return [m for c in sorted(alts) if (m := self.classes[c].get(f.attr)) is not None]
        cls = scope.instance_of(dotted(f.value)) if scope is not None else ""
        method = self.classes.get(cls, {}).get(f.attr)
        recv = dotted(f.value).rsplit(".", 1)[-1].lower()
        # `trainer.train_step(...)` (not `opt.step()`): the one class with that method
        if method is None and "step" in f.attr and "opt" not in recv:
            owners = list({id(m[f.attr]): m[f.attr] for m in self.classes.values() if f.attr in m}.values())
            return owners if len(owners) == 1 else []  # (a class may be known by two names: `m.C`, `C`)
        return [method] if method is not None else []


class Scope:
    """Kinds (tensor / Python value / unknown) of the names of one function or module, flow-insensitively."""

    def __init__(
        self, node: Union[ast.Module, Func], funcs: Functions, parent: Optional[Scope] = None, depth: int = 0
    ) -> None:
        self.node, self.funcs, self.parent, self.depth = node, funcs, parent, depth
        self.values: dict[str, list[tuple[ast.expr, Optional[int]]]] = {}  # name -> (value, tuple index)
        self.fixed: dict[
            str, list[str]
        ] = {}  # kinds known without an expression (parameters, loop variables)
        self.memo: dict[str, str] = {}
        self.optimizers: set[str] = set()
        self.schedulers: set[str] = set()
        self.loaders: set[str] = set()
        self.instances: dict[str, str] = {}  # name -> class defined in this file
        self.built: dict[str, set[str]] = {}  # name -> every class of the files read bound to it here
        self.inferred: dict[str, str] = {}  # name -> class found through a factory or the callers ("": none)
        self.rebound: dict[int, ast.expr] = {}  # a use of a name -> the one value it can have there
        self.host: set[str] = set()  # parameters given a host copy (`log(loss.cpu())`)
        self.off: set[str] = set()  # parameters left False/None by the caller on the training path
        self._collect()
        self._straight_lines(self.node.body)

    # ---- building
    def _collect(self) -> None:
        if isinstance(self.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._params(self.node.args)
        body = self.node.body
        for node in own_nodes(body):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    self._bind(t, node.value)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                value = (
                    node.value
                    if isinstance(node, ast.AnnAssign)
                    else ast.BinOp(node.target, node.op, node.value)
                )
                self._bind(node.target, value)
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                self._bind_loop(node.target, node.iter)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                self._fix(node.optional_vars, UNKNOWN)
            elif isinstance(node, ast.NamedExpr):
                self._bind(node.target, node.value)

    def _straight_lines(self, body: list[ast.stmt]) -> None:
        """Uses of a name that follow, in the same statement list, a plain `name = value` with no other binding of
        it in between: there the name holds that value (`norm = norm.sqrt().item()`, then `if norm > theta:`)."""
        for stmts in [body] + [
            getattr(n, f)
            for n in own_nodes(body)
            if isinstance(n, ast.stmt)
            for f in ("body", "orelse", "finalbody")
            if isinstance(getattr(n, f, None), list)
        ]:
            last: dict[str, ast.expr] = {}
            for stmt in stmts:
                bound = bound_names(stmt)
                plain = (
                    stmt.targets[0].id
                    if isinstance(stmt, ast.Assign)
                    and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name)
                    else None
                )
                uses = stmt.value if plain is not None and isinstance(stmt, ast.Assign) else stmt
                for n in own_nodes([uses]):
                    if isinstance(n, ast.Name) and n.id in last and (n.id not in bound or n.id == plain):
                        self.rebound[id(n)] = last[n.id]
                for name in bound:
                    last.pop(name, None)
                if plain is not None and isinstance(stmt, ast.Assign):
                    last[plain] = stmt.value

    def _params(self, args: ast.arguments) -> None:
        every = args.posonlyargs + args.args + args.kwonlyargs
        defaults = [None] * (len(args.posonlyargs + args.args) - len(args.defaults)) + list(args.defaults)
        defaults += list(args.kw_defaults)
        for a, d in zip(every, defaults):
            ann = dotted(a.annotation) if a.annotation is not None else ""
            if ann.endswith("Tensor"):
                self.fixed.setdefault(a.arg, []).append(TENSOR)
            elif (
                ann in ("int", "float", "str", "bool") or isinstance(d, ast.Constant) and d.value is not None
            ):
                self.fixed.setdefault(a.arg, []).append(PY)
            else:
                self.fixed.setdefault(a.arg, []).append(UNKNOWN)

    def _bind(self, target: ast.expr, value: ast.expr, index: Optional[int] = None) -> None:
        if isinstance(target, ast.Name):
            self.values.setdefault(target.id, []).append((value, index))
            self._note_role(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for i, t in enumerate(target.elts):
                if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                    self._bind(t, value.elts[i])
                else:
                    self._bind(t, value, i)
        elif (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ):
            self._note_role("self." + target.attr, value)

    def _note_role(self, name: str, value: ast.expr) -> None:
        if not isinstance(value, ast.Call):
            return
        callee = dotted(value.func)
        last = callee.rsplit(".", 1)[-1]
        if "lr_scheduler" in callee or "Scheduler" in last or last.endswith("LR"):
            self.schedulers.add(name)
        elif last in _OPTIMIZERS or callee.startswith(("optim.", "torch.optim.")):
            self.optimizers.add(name)
        elif last in _LOADERS:
            self.loaders.add(name)
        elif built := _class_built(value, self.funcs):  # a class of this file: `Net(...)`, `Net(...).cuda()`
            self.instances[name] = built
            self.built.setdefault(name, set()).add(built)
        elif built := _typed_build(value, self.funcs):  # `TD3.TD3(...)`, `model.resnet50(...)`: see _reach.py
            self.built.setdefault(name, set()).add(built)

    def _bind_loop(self, target: ast.expr, it: ast.expr) -> None:
        if (
            isinstance(it, ast.Call)
            and dotted(it.func) == "enumerate"
            and it.args
            and isinstance(target, ast.Tuple)
            and len(target.elts) == 2
        ):
            self._fix(target.elts[0], PY)
            self._bind_loop(target.elts[1], it.args[0])
        elif isinstance(it, ast.Call) and dotted(it.func) == "range":
            self._fix(target, PY)
        elif isinstance(it, ast.Name) and it.id in self.all_loaders():
            self._fix(target, TENSOR)
        else:
            self._fix(target, UNKNOWN)

    def _fix(self, target: ast.expr, kind: str) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                self.fixed.setdefault(node.id, []).append(kind)

    def all_loaders(self) -> set[str]:
        return self.loaders | (self.parent.all_loaders() if self.parent else set())

    def instance_of(self, name: str) -> str:
        s: Optional[Scope] = self
        while s is not None:
            if name in s.instances:
                return s.instances[name]
            if len(s.built.get(name, ())) == 1 and builds_or_wraps(name, s, _typed_build):  # see _reach.py
                return next(iter(s.built[name]))
            if name in s.values or name in s.fixed:
                found = s._inferred(name)
                if found:
                    return found
            s = s.parent
        classes = self.funcs.attrs.get(name, set())  # `self.x = Cls(...)` in another method (`__init__`)
        return next(iter(classes)) if len(classes) == 1 else ""

    def alternatives(self, name: str) -> set[str]:
        """The classes a name is bound to in different branches (`if args.policy == "TD3": policy = TD3(...)
        elif ...: policy = DDPG(...)`, or `self.policy = A(...)` / `B(...)`), when it holds more than one."""
        s: Optional[Scope] = self
        while s is not None:
            if len(s.built.get(name, ())) > 1:
                return s.built[name]
            if name in s.values or name in s.fixed:
                return set()
            s = s.parent
        classes = self.funcs.attrs.get(name, set())
        return classes if len(classes) > 1 else set()

    def _inferred(self, name: str) -> str:
        """The one class a local name holds when no `Cls(...)` binds it here: the return of a factory function of
        the files read (`model = load_model(hparams)` returning `Tacotron2(hparams).cuda()`), or, for a parameter
        (or an element unpacked from one: `net_g, net_d = nets`), what every call of this function in the file
        passes it (`train(decoder=decoder)`). "" when unknown, or when the sources disagree."""
        if name in self.inferred:
            return self.inferred[name]
        self.inferred[name] = ""  # a cycle finds nothing
        found: set[str] = set()
        if self.depth < 3:
            for v, index in self.values.get(name, []):
                if isinstance(v, ast.Name) and index is not None and v.id in self._param_names():
                    found.add(self._passed(v.id, index))
                elif isinstance(v, ast.Call) and index is None:
                    found |= {c for c in self._factory_classes(v) if c}
            if name in self._param_names():
                found.add(self._passed(name, None))
            found.add(annotated_class(self.node, name, self.funcs))  # `trainer: DiffusionPriorTrainer`
        found.discard("")
        self.inferred[name] = next(iter(found)) if len(found) == 1 else ""
        return self.inferred[name]

    def _param_names(self) -> list[str]:
        if not isinstance(self.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return []
        a = self.node.args
        return [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]

    def _factory_classes(self, call: ast.Call) -> set[str]:
        """The classes of the instances a function of the files read returns (`return model`, `return Net()`)."""
        out: set[str] = set()
        for f in self.funcs.resolve(call, self):
            if f not in self.funcs.plain.get(f.name, []):
                continue  # a method: `self` would need its instance
            scope = self.funcs.scope(f, self.depth + 1)
            for node in own_nodes(f.body):
                if isinstance(node, ast.Return) and node.value is not None:
                    v = node.value
                    out.add(
                        scope.instance_of(v.id)
                        if isinstance(v, ast.Name)
                        else _class_built(v, self.funcs)
                        if isinstance(v, ast.Call)
                        else ""
                    )
        return out

    def _passed(self, param: str, index: Optional[int]) -> str:
        """The class of what every call of this (top-level, plain) function in its file passes as `param`
        (element `index` of a list or tuple literal passed there); "" unless all calls agree."""
        f = self.node
        if not isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) or f not in self.funcs.plain.get(
            f.name, []
        ):
            return ""
        positional = [x.arg for x in f.args.posonlyargs + f.args.args]
        found: set[str] = set()
        if f.name not in self.funcs.calls:
            self.funcs.calls[f.name] = calls_of(f.name, self.funcs.tree)
        for caller, call in self.funcs.calls[f.name]:
            arg = kw(call, param)
            if arg is None and param in positional:
                i = positional.index(param)
                plain = [a for a in call.args[: i + 1] if not isinstance(a, ast.Starred)]
                arg = call.args[i] if len(plain) == i + 1 and len(call.args) > i else None
            if index is not None and isinstance(arg, (ast.List, ast.Tuple)):
                arg = arg.elts[index] if index < len(arg.elts) else None
            if not isinstance(arg, ast.Name):
                return ""
            scope = self.funcs.module if caller is None else self.funcs.scope(caller, self.depth + 1)
            found.add(scope.instance_of(arg.id) if scope is not None else "")
        return next(iter(found)) if len(found) == 1 else ""

    def role(self, name: str) -> str:
        s: Optional[Scope] = self
        while s is not None:
            if name in s.optimizers:
                return "optimizer"
            if name in s.schedulers:
                return "scheduler"
            s = s.parent
        return ""

    # ---- querying
    def name_kind(self, name: str) -> str:
        if name in self.memo:
            return self.memo[name]
        if name not in self.values and name not in self.fixed:
            return self.parent.name_kind(name) if self.parent else UNKNOWN
        self.memo[name] = UNKNOWN  # a cycle (x = x + 1) resolves to unknown
        kinds = list(self.fixed.get(name, []))
        kinds += [
            self.kind(v) if i is None else self.element_kind(v, i) for v, i in self.values.get(name, [])
        ]
        self.memo[name] = join(kinds)
        return self.memo[name]

    def element_kind(self, value: ast.expr, index: int) -> str:
        if isinstance(value, ast.Call):
            rets = self._returns(value)
            if rets is not None:
                kinds = [
                    r.scope.kind(r.value.elts[index])
                    if isinstance(r.value, ast.Tuple) and index < len(r.value.elts)
                    else UNKNOWN
                    for r in rets
                ]
                return join(kinds) if kinds else UNKNOWN
        return TENSOR if self.kind(value) == TENSOR else UNKNOWN

    def _returns(self, call: ast.Call) -> Optional[list[_Bound]]:
        """Return values of the same-file function this call runs, read in that function's own scope."""
        funcs = self.funcs.resolve(call, self)
        if not funcs or self.depth >= 2:
            return None
        if typed_call(self.funcs, call, self):
            return None  # a module called by type: its value keeps the kind its name gives (_reach.py)
        rets: list[_Bound] = []
        for f in funcs:
            scope = self.funcs.scope(f, self.depth + 1)
            for node in own_nodes(f.body):
                if isinstance(node, ast.Return) and node.value is not None:
                    rets.append(_Bound(node.value, scope))
        return rets

    def kind(self, e: ast.expr) -> str:
        if isinstance(e, _Bound):
            return e.scope.kind(e.value)
        if isinstance(
            e,
            (
                ast.Constant,
                ast.JoinedStr,
                ast.List,
                ast.Tuple,
                ast.Dict,
                ast.Set,
                ast.ListComp,
                ast.DictComp,
                ast.SetComp,
                ast.Lambda,
            ),
        ):
            return PY
        if isinstance(e, ast.Name):
            if id(e) in self.rebound and self.kind(self.rebound[id(e)]) == PY:
                return PY  # rebound to a Python value just before (`lossf = lossf.item()`)
            return self.name_kind(e.id)
        if isinstance(e, ast.Compare):
            if all(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in e.ops):
                return PY
            return join(self.kind(x) for x in [e.left, *e.comparators])
        if isinstance(e, ast.BoolOp):
            return join(self.kind(x) for x in e.values)
        if isinstance(e, ast.UnaryOp):
            return PY if isinstance(e.op, ast.Not) and self.kind(e.operand) == PY else self.kind(e.operand)
        if isinstance(e, ast.BinOp):
            if isinstance(e.op, ast.Mod) and isinstance(e.left, (ast.Constant, ast.JoinedStr)):
                return PY  # "%d" % x
            return join([self.kind(e.left), self.kind(e.right)])
        if isinstance(e, ast.IfExp):
            return join([self.kind(e.body), self.kind(e.orelse)])
        if isinstance(e, ast.Attribute):
            return self._attr_kind(e)
        if isinstance(e, ast.Subscript):
            inner = self.kind(e.value)
            return inner if inner == TENSOR or isinstance(e.slice, ast.Slice) else UNKNOWN
        if isinstance(e, ast.Call):
            return self._call_kind(e)
        return UNKNOWN

    def _elements_kind(self, e: ast.expr) -> str:
        """The kind of what iterating this gives: a comprehension's element, else the iterable's own kind."""
        if isinstance(e, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
            return self.kind(e.elt)
        return self.kind(e)

    def _attr_kind(self, e: ast.Attribute) -> str:
        if e.attr in _PY_ATTRS:
            return PY
        if e.attr in ("grad", "data", "T"):
            return TENSOR if e.attr == "grad" else self.kind(e.value)
        if isinstance(e.value, ast.Name) and e.value.id in (
            "args",
            "opt",
            "config",
            "cfg",
            "opts",
            "hparams",
        ):
            return PY  # argparse namespaces and configs hold Python values
        return UNKNOWN

    def _call_kind(self, e: ast.Call) -> str:
        f = e.func
        name = dotted(f)
        if isinstance(f, ast.Name):
            if f.id in _PY_BUILTINS:
                return PY
            if f.id in ("min", "max", "sum") and len(e.args) == 1 and not e.keywords:
                # over one iterable: its elements decide (`sum(loss_dict.values())` is a tensor)
                return TENSOR if self._elements_kind(e.args[0]) == TENSOR else UNKNOWN
            if f.id in ("any", "all") and len(e.args) == 1:
                # takes the truth of each element: `any(p.grad.isnan().any() for p in params)` reads the GPU
                return TENSOR if self._elements_kind(e.args[0]) == TENSOR else UNKNOWN
            if f.id in ("abs", "min", "max", "sum"):
                return join(self.kind(a) for a in e.args) if e.args else PY
        module_call = "()" not in name  # torch.max(...), not torch.tensor(x).item() or Beta(...).sample()
        if module_call and name.startswith(_PY_MODULES):
            return PY
        if module_call and name.startswith(_TORCH_ANY):
            return UNKNOWN  # what was saved: a checkpoint dict, its step counter, ...
        if module_call and name.startswith(("torch.", "F.", "nn.functional.", "torch.nn.functional.")):
            return TENSOR
        if isinstance(f, ast.Attribute):
            if f.attr in _PY_METHODS:
                return PY
            recv = self.kind(f.value)
            if f.attr in _TENSOR_METHODS:
                return PY if recv == PY else TENSOR
            if f.attr in _SHARED_METHODS:
                return recv
        rets = self._returns(e)
        if rets is not None and any(dotted(a).endswith((".cpu()", ".numpy()")) for a in e.args):
            return PY  # given a host copy, it computes on the host (torch needs its tensors on one device)
        if rets is not None:
            return join(self.kind(r) for r in rets) if rets else PY
        last = name.rsplit(".", 1)[-1]
        if last[:1].isupper():
            return UNKNOWN  # a class: `ModelEMA(model)`, `Net()` build an object, not a tensor
        if any(m in last.lower() for m in _MODULE_NAMES):
            return TENSOR  # model(x), criterion(out, y), self.loss_fn(...)
        return UNKNOWN


# nn.Module methods that return the module itself: `Net().cuda()` is a Net
_SELF_RETURNING = {
    "cuda",
    "to",
    "train",
    "eval",
    "float",
    "half",
    "double",
    "bfloat16",
    "cpu",
    "requires_grad_",
}


def _class_built(value: ast.expr, funcs: Functions, qualified: bool = False) -> str:
    """The class of the files read that `Cls(...)` or `Cls(...).cuda()` / `.to(device)` builds, else ""; with
    `qualified`, also `module.Cls(...)` of a module imported whole."""
    value = unwrapped(value, _SELF_RETURNING)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in funcs.classes:
        return value.func.id
    name = dotted(value.func) if qualified and isinstance(value, ast.Call) else ""
    return name if "." in name and name in funcs.classes else ""


def _typed_build(value: ast.expr, funcs: Functions) -> str:
    return _class_built(value, funcs, qualified=True) or module_factory_class(
        value, funcs.module_defs, funcs.classes
    )


def _methods_of(c: ast.ClassDef) -> dict[str, Func]:
    return {i.name: i for i in c.body if isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef))}


class _Bound(ast.expr):
    """An expression to be read in another scope (a callee's return value)."""

    def __init__(self, value: ast.expr, scope: Scope) -> None:
        super().__init__()
        self.value, self.scope = value, scope
