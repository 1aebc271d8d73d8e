"""The project view: the project's own modules that the linted files import, read (never run) for what they show.

`idlehound lint train.py` alone used to know only train.py. A user's script imports its model, its loader and its
training helpers from the project (`from engine import train_one_epoch`, `from models import Net`), so lint also
reads those modules: the project's imports are resolved to files on disk (relative imports in the package, absolute
ones in the script's folder and its parents up to the project root: the nearest folder holding `.git`,
`pyproject.toml`, `setup.py` or `setup.cfg`), a few hops deep and a bounded number of files. They are "context":
parsed with `ast`, never imported, and never reported on themselves; what they show is reported at the line of
the linted file that uses it (the call of the helper, the model built), naming where it came from.
"""

from __future__ import annotations

import ast
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Optional

from ..errors import IdlehoundError
from ._facts import _first_conv, conv_test
from ._model import Functions
from ._project import Imports, _imports, _module_paths
from ._source import MAX_BYTES, parse_source, read_source
from ._syntax import dotted

MAX_HOPS = 3  # imports followed from a linted file: train.py -> models/__init__.py -> models/resnet.py -> ...
MAX_FILES = 64  # context files read in all (bounds time on a large checkout)
MAX_CONTEXT_BYTES = MAX_BYTES // 8  # a 1 MB module is generated code or data, not a training helper
_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")
_PARENTS = 2  # absolute imports are looked up beside the file and at most this many folders up


def project_root(here: Path) -> Path:
    """The nearest folder (this one or up to _PARENTS above) that marks a project root; else `here` itself (a
    loose script: only its own folder is its project)."""
    d = here
    for _ in range(_PARENTS + 1):
        if any((d / m).exists() for m in _MARKERS):
            return d
        if d.parent == d:
            break
        d = d.parent
    return here


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _imported_paths(path: Path, tree: ast.Module, root: Path) -> list[Path]:
    """The project files one file imports, in the order written (deterministic)."""
    out: list[Path] = []
    for module, names, roots, _ in _imports(tree, path.parent):
        folders = [d for d in roots if _inside(d, root)]  # where lint looks for it, inside the project
        for name in [module] + [f"{module}.{a}" if module else a for a in names if a != "*"]:
            for p in _module_paths(name, folders):
                if p not in out and p != path and p.is_file():
                    out.append(p)
    return out


def context_files(
    linted: dict[Path, ast.Module], max_hops: int = MAX_HOPS, max_files: int = MAX_FILES
) -> dict[Path, tuple[str, str, ast.Module]]:
    """The project modules the linted files import (breadth first, in a fixed order), not linted themselves:
    absolute path -> (name to show, source, tree). A file that cannot be read or parsed is left out (it is not
    the user's to fix here); the linted files are never read twice."""
    out: dict[Path, tuple[str, str, ast.Module]] = {}
    frontier = [(p, t, project_root(p.parent)) for p, t in sorted(linted.items())]
    for _ in range(max_hops):
        nxt: list[tuple[Path, ast.Module, Path]] = []
        for path, tree, root in frontier:
            for p in _imported_paths(path, tree, root):
                if p in linted or p in out:
                    continue
                if len(out) >= max_files:
                    return out
                parsed = _read(p)
                if parsed is not None:
                    out[p] = (_shown(p, root), *parsed)
                    nxt.append((p, parsed[1], root))
        frontier = nxt
    return out


def _read(p: Path) -> Optional[tuple[str, ast.Module]]:
    try:
        st = p.stat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_CONTEXT_BYTES:
            return None
        source = read_source(p)
        return source, parse_source(source, str(p))
    except (IdlehoundError, OSError):
        return None


def _shown(p: Path, root: Path) -> str:
    """How a context file is named in a finding: relative to its project root."""
    try:
        return p.relative_to(root).as_posix()
    except ValueError:
        return p.name


def project_name(file: str) -> str:
    """A linted file's name relative to its project root (how a `why` names the caller of a helper)."""
    p = Path(os.path.abspath(file))
    return _shown(p, project_root(p.parent))


def defining_files(trees: dict[Path, ast.Module]) -> dict[int, Path]:
    """The file of every function and class node (by id), to say where a fact came from."""
    return {
        id(n): p
        for p, t in trees.items()
        for n in ast.walk(t)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    } | {id(n.value): p for p, t in trees.items() for n in t.body if isinstance(n, ast.Assign)}


class ConvDefs:
    """Which classes and functions of the context modules build convolutions: one whose body builds a convolution
    layer or a torchvision/timm model, or calls (or subclasses) a class or function of the project that does,
    followed a few definitions deep (`UNetModel` -> `conv_nd(...)` -> `nn.Conv2d`). A module that defines a
    convolution somewhere but whose called helper does not (`update_ema` beside `conv_nd`) does not count."""

    def __init__(
        self,
        context: dict[Path, ast.Module],
        trees: dict[Path, ast.Module],
        imports: Callable[[Path], Imports],
    ) -> None:
        self.context, self.trees = context, trees
        self.imports = imports  # imported_defs of each file, shared with the checkers
        self.owner = defining_files(trees)
        self.memo: dict[int, Optional[ast.Call]] = {}
        self.names: dict[Path, dict[str, ast.AST]] = {}
        self.tests: dict[Path, Callable[[ast.Call], bool]] = {}
        self.home: dict[ast.Call, Path] = {}  # the module each convolution found is in
        self.linted: dict[Path, bool] = {}  # a linted file with no convolution of its own (followed through)

    def _names(self, p: Path) -> dict[str, ast.AST]:
        """What a name means in module p: its own top-level definitions and those it imports from the project."""
        if p not in self.names:
            tree = self.trees[p]
            imported, modules = self.imports(p)
            own = {
                n.name: n
                for n in tree.body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            }
            flat = {f"{m}.{k}": d for m, defs in modules.items() for k, d in defs.items()}
            self.names[p] = {**flat, **imported, **own}
        return self.names[p]

    def conv_of(self, d: ast.AST, depth: int = 0) -> Optional[ast.Call]:
        """The convolution a context definition builds (itself or through what it calls), or None."""
        if id(d) in self.memo:
            return self.memo[id(d)]
        where = self.owner.get(id(d))
        if where is None or depth > 4 or where not in self.context and not self._passes(where):
            return None
        self.memo[id(d)] = None  # a cycle builds nothing more
        if where not in self.tests:
            self.tests[where] = conv_test(self.trees[where], trains=True)
        is_conv, names = self.tests[where], self._names(where)
        found: Optional[ast.Call] = None
        parts: list[ast.AST] = list(d.bases) if isinstance(d, ast.ClassDef) else []
        parts += (
            [v for v in d.values if v is not None] if isinstance(d, ast.Dict) else []
        )  # a registry's entries
        for n in (n for part in parts + [d] for n in ast.walk(part)):
            callee = dotted(n.func) if isinstance(n, ast.Call) else dotted(n) if n in parts else ""
            if isinstance(n, ast.Call) and is_conv(n):
                found = n
            elif callee in names and names[callee] is not d:
                found = self.conv_of(names[callee], depth + 1)
            if found is not None:
                break
        self.memo[id(d)] = found
        if found is not None and found not in self.home:
            self.home[found] = where
        return found

    def _passes(self, where: Path) -> bool:
        """A linted file's definitions are followed to the context modules they build from (cifar100's
        `get_network(args)` in utils.py imports `models.vgg.vgg16_bn`) only when the file builds no convolution
        of its own: one that does reports IH015 itself."""
        if where not in self.linted:
            self.linted[where] = _first_conv(self.trees[where], trains=True) is None
        return self.linted[where]


def model_build(
    tree: ast.Module, funcs: Functions, convs: ConvDefs, path: Optional[Path] = None
) -> Optional[tuple[ast.Call, Path, ast.Call]]:
    """The first call in a linted file of a class or function from a context module that builds convolutions
    (`model = Darknet(cfg)`, `models.create_model(args)`, `network.modeling.__dict__[name](...)`): the call, that
    module and the convolution."""
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        for d in funcs.imported_defs(n) + _module_registry(n, path, convs):
            conv = convs.conv_of(d)
            if conv is not None:
                return n, convs.home[conv], conv
    return None


def _module_registry(call: ast.Call, path: Optional[Path], convs: ConvDefs) -> list[ast.AST]:
    """`network.modeling.__dict__[opts.model](...)`: a project module's own builder functions used as a registry
    (its public top-level functions; any that builds a convolution counts, as for a registry dict's entries)."""
    f = call.func
    if path is None or not (
        isinstance(f, ast.Subscript) and isinstance(f.value, ast.Attribute) and f.value.attr == "__dict__"
    ):
        return []
    module = dotted(f.value.value)
    for p in _module_paths(module, [path.parent, path.parent.parent]) if module else []:
        if p in convs.context:
            tree = convs.context[p]
            return [n for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
    return []


_DICTS = ("dict", "Dict", "EasyDict", "edict", "OrderedDict", "AttrDict")


def kwargs_pinned(param: str, trees: Iterable[ast.Module]) -> bool:
    """Whether the project builds the `**param` options of a loader with `pin_memory` set (not False) under that
    name: `c.data_loader_kwargs = dnnlib.EasyDict(pin_memory=True, ...)` or `f(data_loader_kwargs=dict(...))`
    (StyleGAN2-ADA and EDM pass the dict to their training loop through `**c`). A name given another value too
    or no such dict: not pinned (unknown)."""
    values: list[ast.expr] = []
    for tree in trees:
        for n in ast.walk(tree):
            if (
                isinstance(n, ast.Assign)
                and any(_names(t) == param for t in n.targets)
                or isinstance(n, ast.keyword)
                and n.arg == param
            ):
                values.append(n.value)
    return bool(values) and all(_pins(v) for v in values)


def _names(t: ast.expr) -> str:
    if isinstance(t, ast.Attribute):
        return t.attr
    if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant):
        return str(t.slice.value)
    return t.id if isinstance(t, ast.Name) else ""


def _pins(v: ast.expr) -> bool:
    if isinstance(v, ast.Dict):
        pin = [
            val
            for key, val in zip(v.keys, v.values)
            if isinstance(key, ast.Constant) and key.value == "pin_memory"
        ]
    elif isinstance(v, ast.Call) and dotted(v.func).rsplit(".", 1)[-1] in _DICTS:
        pin = [k.value for k in v.keywords if k.arg == "pin_memory"]
    else:
        return False
    return bool(pin) and not (isinstance(pin[0], ast.Constant) and pin[0].value in (False, None, 0))


MAX_SCANNED = 2000  # .py files of a project searched for a name (a text search first; only hits are parsed)


def mentioning(root: Path, word: str, skip: set[Path]) -> list[ast.Module]:
    """The parsed project files under `root` whose text holds `word` (callers of a function in another file:
    the project view otherwise follows imports only downwards). Bounded by MAX_SCANNED files."""
    out = []
    for p in _project_sources(root):
        if p in skip:
            continue
        try:
            st = p.stat()  # a regular file only: opening a FIFO named x.py would block
            if (
                not stat.S_ISREG(st.st_mode)
                or st.st_size > MAX_CONTEXT_BYTES
                or word.encode() not in p.read_bytes()
            ):
                continue
        except OSError:
            continue
        parsed = _read(p)
        if parsed is not None:
            out.append(parsed[1])
    return out


_NOT_SOURCES = {"site-packages", "node_modules", "__pycache__", "build", "dist"}


def _project_sources(root: Path) -> Iterator[Path]:
    """The project's own .py files, sorted, at most MAX_SCANNED: hidden folders (`.git`, `.venv`), virtual
    environments (a `pyvenv.cfg`), installed packages and build outputs left out; symlinked folders not followed."""
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".")
            and d not in _NOT_SOURCES
            and not os.path.exists(os.path.join(dirpath, d, "pyvenv.cfg"))
        )
        for f in sorted(filenames):
            if f.endswith(".py"):
                yield Path(dirpath) / f
                count += 1
                if count >= MAX_SCANNED:
                    return
