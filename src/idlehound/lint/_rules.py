"""Static rules: lines that make the GPU wait, found with `ast`, only where they run every step."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    why: str
    fix: str


RULES: dict[str, Rule] = {r.id: r for r in [
    Rule("IH001", "item-in-loop", "`.item()` copies a GPU value to the host and waits for all queued GPU work",
         "keep the value on the GPU (`total += loss.detach()`) and call .item() every N steps"),
    Rule("IH002", "cpu-in-loop", "`.cpu()` copies a GPU tensor to the host and waits for the GPU",
         "copy only every N steps, or into pinned memory with non_blocking=True"),
    Rule("IH003", "numpy-in-loop", "`.numpy()` needs the tensor on the host: a blocking copy from the GPU",
         "keep the computation in torch on the GPU; convert every N steps"),
    Rule("IH004", "tolist-in-loop", "`.tolist()` copies a GPU tensor to the host and waits for the GPU",
         "keep the values on the GPU; convert every N steps"),
    Rule("IH005", "print-tensor", "printing or formatting a tensor reads its values on the host (several syncs)",
         "print a Python number every N steps: `print(f\"{loss.item():.4f}\")` inside `if step % 100 == 0`"),
    Rule("IH006", "float-int-of-tensor", "`float(t)` / `int(t)` of a tensor is a hidden `.item()`: a sync",
         "keep it as a tensor, or read it every N steps"),
    Rule("IH007", "tensor-condition", "a tensor in an `if`/`while` condition must be read on the host: a sync",
         "decide on the GPU (`torch.where`) or check every N steps"),
    Rule("IH008", "synchronize-in-loop", "`torch.cuda.synchronize()` waits for all GPU work every step",
         "remove it; time with CUDA events (torch.cuda.Event) if that is what it was for"),
    Rule("IH009", "empty-cache-in-loop", "`torch.cuda.empty_cache()` returns cached memory, so the next step "
         "must cudaMalloc again (and cudaFree synchronizes)", "remove it from the loop"),
    Rule("IH010", "dataloader-no-workers", "a DataLoader without `num_workers` loads every batch in the training "
         "process while the GPU waits", "DataLoader(..., num_workers=N, persistent_workers=True), N ~ half the cores"),
    Rule("IH011", "dataloader-no-pin-memory", "without `pin_memory=True` host-to-device copies come from pageable "
         "memory: slower, and they block the host", "DataLoader(..., pin_memory=True) and .to(device, non_blocking=True)"),
    Rule("IH012", "blocking-to", "`.to(device)` without `non_blocking=True` after a pinned loader blocks the host "
         "until the copy is done", "x = x.to(device, non_blocking=True)"),
    Rule("IH013", "zero-grad-not-none", "`zero_grad(set_to_none=False)` launches a memset kernel per parameter",
         "opt.zero_grad(set_to_none=True) (the default)"),
    Rule("IH014", "optimizer-not-fused", "this optimizer runs one small kernel per parameter and op",
         "pass fused=True (Adam, AdamW, SGD on CUDA) or keep foreach on"),
    Rule("IH015", "cudnn-benchmark-off", "convolutions without `torch.backends.cudnn.benchmark = True` use cuDNN's "
         "heuristic algorithm instead of the fastest for your shapes", "torch.backends.cudnn.benchmark = True"),
]}


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
        return {"rule": self.rule, "name": r.name, "file": self.file, "line": self.line, "col": self.col,
                "code": self.text, "why": r.why, "fix": r.fix}


_SYNC_METHODS = {"item": "IH001", "cpu": "IH002", "numpy": "IH003", "tolist": "IH004"}
_SCALARS = {"item", "tolist", "numpy", "float", "int", "bool", "len", "str", "format", "round"}


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _is_training_loop(loop: ast.AST) -> bool:
    """A loop whose body calls backward() or an optimizer step: it runs once per training step."""
    for node in ast.walk(loop):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("backward", "step", "zero_grad"):
            return True
    return False


def _kw(call: ast.Call, name: str) -> Optional[ast.expr]:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _const(node: Optional[ast.expr]):
    return node.value if isinstance(node, ast.Constant) else None


class _Checker(ast.NodeVisitor):
    def __init__(self, file: str, lines: list[str], uses_cuda: bool, has_conv: bool, benchmark: bool) -> None:
        self.file, self.lines = file, lines
        self.uses_cuda, self.has_conv, self.benchmark = uses_cuda, has_conv, benchmark
        self.out: list[LintFinding] = []
        self.loop_depth = 0
        self.tensors: set[str] = set()  # names assigned tensor-valued expressions inside training loops
        self.pinned_loader = False
        self.periodic = 0  # inside `if step % N == 0:` blocks

    def add(self, rule: str, node: ast.AST) -> None:
        line = getattr(node, "lineno", 0)
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        self.out.append(LintFinding(rule, self.file, line, getattr(node, "col_offset", 0), text))

    # ---- loops
    def _loop(self, node) -> None:
        training = _is_training_loop(node)
        self.loop_depth += training
        if training:
            self._collect_tensors(node)
        if isinstance(node, ast.While) and self.loop_depth and self._tensor_expr(node.test):
            self.add("IH007", node)
        self.generic_visit(node)
        self.loop_depth -= training

    visit_For = visit_While = visit_AsyncFor = _loop

    def _collect_tensors(self, loop) -> None:
        for node in ast.walk(loop):
            if isinstance(node, ast.Assign) and self._tensor_valued(node.value):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        self.tensors.add(t.id)

    @staticmethod
    def _tensor_valued(v: ast.expr) -> bool:
        if isinstance(v, ast.Call):
            f = v.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            return name not in _SCALARS
        return isinstance(v, (ast.BinOp, ast.Subscript))

    def _tensor_expr(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.tensors
        if isinstance(node, ast.Compare):
            return any(self._tensor_expr(x) for x in [node.left, *node.comparators])
        if isinstance(node, ast.BoolOp):
            return any(self._tensor_expr(x) for x in node.values)
        if isinstance(node, ast.UnaryOp):
            return self._tensor_expr(node.operand)
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
            "any", "all", "isnan", "isinf")

    def visit_If(self, node: ast.If) -> None:
        if self.loop_depth and self._tensor_expr(node.test):
            self.add("IH007", node)
        # `if step % 100 == 0:` runs rarely: a sync or print inside it costs nothing worth reporting.
        periodic = any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(node.test))
        self.periodic += periodic
        for child in node.body:
            self.visit(child)
        self.periodic -= periodic
        for child in node.orelse:
            self.visit(child)

    # ---- calls
    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        dotted = _dotted(f)
        attr = f.attr if isinstance(f, ast.Attribute) else ""
        if self.loop_depth and not self.periodic:
            self._in_loop(node, dotted, attr)
        self._anywhere(node, dotted, attr)
        self.generic_visit(node)

    def _in_loop(self, node: ast.Call, dotted: str, attr: str) -> None:
        if attr in _SYNC_METHODS and not node.args:
            self.add(_SYNC_METHODS[attr], node)
        elif dotted.endswith("cuda.synchronize"):
            self.add("IH008", node)
        elif dotted.endswith("cuda.empty_cache"):
            self.add("IH009", node)
        elif dotted == "print" and any(self._shows_tensor(a) for a in node.args):
            self.add("IH005", node)
        elif dotted in ("float", "int", "bool") and node.args and self._tensor_expr(node.args[0]):
            self.add("IH006", node)
        elif attr == "to" and self.pinned_loader and node.args and _const(_kw(node, "non_blocking")) is not True:
            self.add("IH012", node)

    def _shows_tensor(self, arg: ast.expr) -> bool:
        if isinstance(arg, ast.JoinedStr):
            return any(isinstance(v, ast.FormattedValue) and self._tensor_expr(v.value) for v in arg.values)
        return self._tensor_expr(arg)

    def _anywhere(self, node: ast.Call, dotted: str, attr: str) -> None:
        name = dotted.rsplit(".", 1)[-1]
        if name == "DataLoader":
            workers = _const(_kw(node, "num_workers"))
            if _kw(node, "num_workers") is None or workers == 0:
                self.add("IH010", node)
            pin = _kw(node, "pin_memory")
            if _const(pin) is True:
                self.pinned_loader = True
            elif self.uses_cuda:
                self.add("IH011", node)
        elif attr == "zero_grad" and _const(_kw(node, "set_to_none")) is False:
            self.add("IH013", node)
        elif name in ("Adam", "AdamW", "SGD") and dotted.startswith(("torch.optim", "optim", "Adam", "AdamW", "SGD")) \
                and self._unfused(node, name):
            self.add("IH014", node)

    def _unfused(self, node: ast.Call, name: str) -> bool:
        if _const(_kw(node, "foreach")) is False:
            return True
        return self.uses_cuda and name in ("Adam", "AdamW") and _kw(node, "fused") is None \
            and _kw(node, "foreach") is None


def check_source(source: str, file: str) -> list[LintFinding]:
    tree = ast.parse(source, filename=file)
    lines = source.splitlines()
    uses_cuda = "cuda" in source
    has_conv = "Conv2d" in source or "torchvision.models" in source or "resnet" in source.lower()
    benchmark = "cudnn.benchmark" in source
    c = _Checker(file, lines, uses_cuda, has_conv, benchmark)
    # Loaders first: whether a pinned loader exists decides IH012 inside the loop.
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _dotted(node.func).endswith("DataLoader") and \
                _const(_kw(node, "pin_memory")) is True:
            c.pinned_loader = True
    c.visit(tree)
    if uses_cuda and has_conv and not benchmark:
        first = next((n for n in ast.walk(tree) if isinstance(n, ast.Call) and
                      (_dotted(n.func).endswith("Conv2d") or "resnet" in _dotted(n.func).lower())), None)
        if first is not None:
            c.add("IH015", first)
    return _suppressed(c.out, lines)


def _suppressed(found: list[LintFinding], lines: list[str]) -> list[LintFinding]:
    """Drop findings whose line says `# idlehound: ignore` or `# idlehound: ignore[IH001,...]`."""
    out, seen = [], set()
    for f in found:
        key = (f.rule, f.line, f.col)
        if key in seen:
            continue
        seen.add(key)
        line = lines[f.line - 1] if 0 < f.line <= len(lines) else ""
        tag = line.partition("# idlehound: ignore")[2] if "# idlehound: ignore" in line else None
        if tag is not None and (not tag.startswith("[") or f.rule in tag.split("]")[0]):
            continue
        out.append(f)
    return sorted(out, key=lambda f: (f.file, f.line, f.col, f.rule))

