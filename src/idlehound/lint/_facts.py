"""What one file shows as a whole: GPU use, its DataLoaders, cudnn.benchmark, the first convolution."""

from __future__ import annotations

import ast
import contextlib
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Optional, Union

from ..errors import IdlehoundError
from ._kwargs import resolve_kwargs
from ._oneoff import consumed_inline, tuple_sets_benchmark
from ._syntax import const, dotted, is_loader, kw

_DEVICE_WORDS = ("device", "gpu", "rank", "cuda")


def _device_like(e: ast.expr) -> bool:
    if isinstance(e, ast.Constant) and isinstance(e.value, str):
        return e.value.startswith("cuda")
    if isinstance(e, ast.Call) and dotted(e.func) == "torch.device":
        return not (e.args and const(e.args[0]) == "cpu")
    name = dotted(e).lower()
    last = name.rsplit(".", 1)[-1].removesuffix("()")
    return any(w in name for w in _DEVICE_WORDS) or last == "dev"  # `dev`, `dist_util.dev()`


def gpu_evidence(tree: ast.AST) -> bool:
    """Whether the file runs on an accelerator: `cuda`, `torch.accelerator`, `nccl`, tensors moved to a
    device variable (device-agnostic scripts pick the GPU when there is one), or a Lightning Trainer's GPUs. A file
    that imports another accelerator's PyTorch backend (`torch_xla`: `xm.xla_device()`; Intel's
    `intel_extension_for_pytorch`) and never says `cuda` runs there: no cuDNN, no CUDA stream to wait for."""
    if isinstance(tree, ast.Module) and _other_backend(tree) and not _says_cuda(tree):
        return False
    if _lightning_gpus(tree):
        return True
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


_OTHER_BACKENDS = ("torch_xla", "intel_extension_for_pytorch", "habana_frameworks")


def _other_backend(tree: ast.Module) -> bool:
    for n in ast.walk(tree):
        names = [a.name for a in n.names] if isinstance(n, ast.Import) else []
        names += [n.module or ""] if isinstance(n, ast.ImportFrom) else []
        if any(m.split(".", 1)[0] in _OTHER_BACKENDS for m in names):
            return True
    return False


def _says_cuda(tree: ast.Module) -> bool:
    return any(
        isinstance(n, ast.Attribute)
        and n.attr == "cuda"
        or isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and (n.value.startswith("cuda") or n.value == "nccl")
        for n in ast.walk(tree)
    )


def cpu_functions(tree: ast.Module) -> set[int]:
    """Top-level functions of a file that clearly run on the CPU although the file uses the GPU elsewhere (a
    library of training functions, some for the GPU, some not): no GPU evidence in the function, no parameter
    named like a device, never referenced in the file (a caller outside it passes its arguments), and no GPU
    evidence in the module-level code. The ids of their nodes."""
    funcs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    rest = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    if not funcs or any(gpu_evidence(n) for n in rest):
        return set()
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    used |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    return {
        id(f)
        for f in funcs
        if f.name not in used and not _device_param(f) and not gpu_evidence(f) and not _decorated(f)
    }


def _device_param(f: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> bool:
    a = f.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    return any(w in name.lower() for name in names for w in _DEVICE_WORDS) or a.kwarg is not None


def _decorated(f: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> bool:
    """`@hydra.main(...)`, `@click.command()`: run by the decorator, with whatever the program sets up."""
    return bool(f.decorator_list)


_LIGHTNING = ("pytorch_lightning", "lightning")


def _lightning_gpus(tree: ast.AST) -> bool:
    """A Lightning file that gives its Trainer GPUs: `gpus=` (not 0 or None), `accelerator="gpu"`/`"cuda"`, or a
    `gpus` setting read from the command line or a config (`args.gpus`, `trainer_config["gpus"]`). Lightning's
    `gpus` names GPUs only; `accelerator="cpu"` and `gpus=0` are not evidence."""
    imports = (
        a.name
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in (n.names if isinstance(n, ast.Import) else [ast.alias(n.module or "")])
    )
    if not any(name.split(".", 1)[0] in _LIGHTNING for name in imports):
        return False
    return any(_gives_gpus(n) for n in ast.walk(tree))


def _gives_gpus(n: ast.AST) -> bool:
    if isinstance(n, ast.keyword) and n.arg == "gpus":
        return not isinstance(n.value, ast.Constant) or n.value.value not in (0, None)
    if isinstance(n, ast.keyword) and n.arg == "accelerator":
        return const(n.value) in ("gpu", "cuda")
    return (isinstance(n, ast.Attribute) and n.attr == "gpus") or (
        isinstance(n, ast.Constant) and n.value == "gpus"
    )


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
        dotted(a)  # `self.dataloader` too (prepared in `__init__`)
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and _prepares(n)
        for a in n.args
        if isinstance(a, (ast.Name, ast.Attribute)) and dotted(a)
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
        self.params = {  # parameters of the enclosing functions: values their callers pass
            a.arg
            for f in chain
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            for a in f.args.posonlyargs + f.args.args + f.args.kwonlyargs
        }
        self.keys: dict[str, list[ast.expr]] = {}
        self.kw_params: list[str] = []  # `**data_loader_kwargs`, a parameter: what the callers pass
        for k in call.keywords:
            if k.arg is None and isinstance(k.value, ast.Name) and k.value.id in self.params:
                self.kw_params.append(k.value.id)
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
        """A value other than False, not a parameter of the enclosing function (`pin_memory=pin_memory` in a
        `create_loader(...)` factory is whatever its callers pass: unknown); `args.pin_mem` counts."""
        return not self.prepared and any(
            const(v) is not False and not (isinstance(v, ast.Name) and v.id in self.params)
            for v in self.keys.get("pin_memory", [])
        )


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
    found = [_Loader(n, c) for n, c in _with_scopes(tree) if isinstance(n, ast.Call) and is_loader(n)]
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
    inline = consumed_inline(tree) if found else set()  # `[d[0] for d in DataLoader(ds)]`: a one-off pass
    for ld in found:
        ld.evaluation = ld.evaluation or id(ld.call) in inline
        ld.prepared = any(name in prepared for name in ld.names)
        ld.on_device = _dataset_class(ld.call, made) in on_device
    if len(found) > 1:  # a validation/test loader beside a training one: its epoch pass is not the training
        for ld in found:
            ld.evaluation = ld.evaluation or (
                bool(ld.names) and all(_EVAL_WORDS.search(n.rsplit(".", 1)[-1]) for n in ld.names)
            )
    return found


_CONVS = ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")


def _timm_builders(tree: ast.Module) -> set[str]:
    """timm's `create_model` as this file calls it (every timm vision model starts with a Conv2d stem or patch
    embedding)."""
    return {"timm.create_model", "timm.models.create_model"} | {
        a.asname or a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and (n.module or "").split(".", 1)[0] == "timm"
        for a in n.names
        if a.name == "create_model" or a.name == "PatchEmbed"  # timm's PatchEmbed is a Conv2d projection
    }


# diffusers' convolutional models: their blocks are Conv1d/Conv2d/Conv3d (`conv_in`, ResNet blocks, up/down samplers)
_DIFFUSERS_CONV_MODELS = {
    "UNet1DModel",
    "UNet2DModel",
    "UNet2DConditionModel",
    "UNet3DConditionModel",
    "UNetSpatioTemporalConditionModel",
    "AutoencoderKL",
    "AutoencoderTiny",
    "VQModel",
    "ControlNetModel",
}


def _diffusers_classes(tree: ast.Module) -> set[str]:
    """diffusers' convolutional model classes as this file imports them (`from diffusers import UNet2DModel`)."""
    return {
        a.asname or a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and (n.module or "").split(".", 1)[0] == "diffusers"
        for a in n.names
        if a.name in _DIFFUSERS_CONV_MODELS
    }


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


def _first_conv(tree: ast.Module, trains: bool = False) -> Optional[ast.Call]:
    """The first convolution layer or torchvision model built in this file; a timm model only in a file that
    trains (export, conversion and estimate scripts build one too, and run it once)."""
    is_conv = conv_test(tree, trains)
    return next((n for n in ast.walk(tree) if isinstance(n, ast.Call) and is_conv(n)), None)


def conv_test(tree: ast.Module, trains: bool = False) -> Callable[[ast.Call], bool]:
    """Whether a call of this file builds a convolution layer or a torchvision (with `trains`, timm) model."""
    modules, builders = _vision_model_names(tree)
    builders |= _timm_builders(tree) if trains else set()
    diffusers = _diffusers_classes(tree) if trains else set()

    def test(n: ast.Call) -> bool:
        func = n.func.value if isinstance(n.func, ast.Subscript) else n.func  # models.__dict__[arch](...)
        name = dotted(func)
        return (
            name.endswith(_CONVS)
            or name in builders
            or name.split(".", 1)[0] in diffusers  # `UNet2DModel(...)`, `AutoencoderKL.from_pretrained(...)`
            or name.rsplit(".", 1)[0] in modules
            or name.rsplit(".", 2)[0] in modules
        )

    return test


def _benchmark_on(tree: ast.Module) -> bool:
    """Whether the file sets cudnn.benchmark to anything but a literal False (a flag counts as set)."""
    for n in ast.walk(tree):
        if (
            isinstance(n, ast.Assign)
            and any(dotted(t).endswith("cudnn.benchmark") for t in n.targets)
            and const(n.value) is not False
        ):
            return True
        if tuple_sets_benchmark(n):  # `cudnn.benchmark, cudnn.deterministic = True, False`
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
        # a pinned test loader beside an unpinned training one does not pin the batches the training step copies
        pinned = any(ld.pinned() and not ld.evaluation for ld in _loaders(tree))
        return Facts(gpu_evidence(tree), pinned, _benchmark_on(tree))
