"""One-way layers: a module imports only from its own package or from a lower layer, and across packages only
public names (docs/architecture.md). Read from the source with ast: nothing is imported or run."""

from __future__ import annotations

import ast
import functools
import importlib.util
from pathlib import Path
from typing import Optional

SRC = Path(__file__).resolve().parent.parent / "src"

# Lowest first: the one layer table. docs/architecture.md's table is written from it by
# `python tools/layer_table.py` (test_the_architecture_doc_shows_this_table holds them equal). A module may import
# from its own package, from anything in a lower layer, and from nothing in its own layer's other packages or above:
# packages that share a layer stand beside each other. Each row: (layer, its packages and modules, what it knows).
LAYER_TABLE: list[tuple[str, tuple[str, ...], str]] = [
    (
        "base",
        ("errors", "_version", "metrics", "_startup", "vocabulary"),
        "typed errors; `__version__` (written once; pyproject.toml reads it); metric definitions; the CLI's quiet "
        "Ctrl-C during start-up; the words the layers pass each other (finding causes, severities, kinds, idle "
        "causes, replay fix names, profiler actions, tune's loss checks and statuses)",
    ),
    (
        "settings",
        ("settings",),
        "every `IDLEHOUND_*` environment variable: read, checked (a bad value: `SettingError`), documented in "
        "docs/environment.md",
    ),
    (
        "base helpers",
        ("_paths", "_limits", "sampler"),
        "user code vs libraries; bounded reading of untrusted JSON; the utilisation sampler",
    ),
    (
        "run folder",
        ("runfolder",),
        "the run-folder layout, alone: file names (trace, sidecar, run.json, samples.json, rank files, reports), "
        "a fresh or shared folder, reading and writing run.json/samples.json, the rank in a worker name",
    ),
    ("trace", ("trace",), "Kineto JSON into an `EventTable`"),
    ("analysis", ("analysis",), "steps, breakdown, idle gaps by cause, replay"),
    (
        "capture",
        ("capture",),
        "running a script or a block under the profiler; writes the run folder through `runfolder`",
    ),
    ("diagnose", ("diagnose",), "one rule per cause, ranked findings"),
    (
        "report",
        ("report",),
        "every renderer of every document (report, compare, ranks, ladder) and the document model; "
        "`report/__init__` is the public API (renderers load on first use)",
    ),
    (
        "result",
        ("result",),
        "what `idlehound.analyze()` returns: an `Analysis` with its findings, the report document, "
        "`_repr_html_` and `to_pandas()`",
    ),
    (
        "pipeline",
        ("pipeline", "compare"),
        "trace path in, analysis + findings + report document out; two documents compared",
    ),
    ("workloads", ("workloads",), "the built-in ResNet18/CIFAR10 case"),
    (
        "tools",
        ("distributed", "lint", "tune", "ladder", "doctor"),
        "the ranks comparison (its Ray engine in `distributed/_ray.py`, imported only for `--engine ray`), the "
        "static checker, the fix tuner, the ladder, the environment check; beside each other",
    ),
    (
        "app",
        ("app",),
        "what each command and `idlehound.profile()` do end to end: capture then analyse, write and print",
    ),
    (
        "entry points",
        ("cli", "integrations", "__init__"),  # __init__: the idlehound package itself
        "parse options and call `app`; framework callbacks; the Python API",
    ),
    ("python -m idlehound", ("__main__",), "runs `cli`"),
]
LAYERS: list[tuple[str, set[str]]] = [(name, set(units)) for name, units, _ in LAYER_TABLE]
# Modules of the idlehound package itself that every layer may use although their names start with "_".
SHARED_BASE = {"_version", "_paths", "_limits", "_startup"}


def _rank(unit: str, layers: list[tuple[str, set[str]]]) -> Optional[int]:
    return next((i for i, (_, units) in enumerate(layers) if unit in units), None)


def _module_name(path: Path, root: Path) -> tuple[str, bool]:
    """('idlehound.analysis._core', False) for a file; a package's __init__ gives the package, True."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_pkg = parts[-1] == "__init__"
    if is_pkg:
        parts = parts[:-1]
    return ".".join(parts), is_pkg


def _unit(module: str) -> str:
    """The package or top-level module a dotted name belongs to: idlehound.analysis._core -> 'analysis'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _tree(path: Path) -> ast.Module:
    """The file's syntax tree, parsed once per text: the checks read a module again for each import of it."""
    return _parse(path.read_text(encoding="utf-8"))


@functools.cache
def _parse(text: str) -> ast.Module:
    return ast.parse(text)


def _imports(tree: ast.AST, module: str, is_pkg: bool) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, imported names) for every import of idlehound, lazy ones included."""
    out = []
    package = module if is_pkg else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names if a.name.split(".")[0] == "idlehound"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == "idlehound":
                out.append((node.lineno, target, [a.name for a in node.names]))
    return out


def _is_module(root: Path, dotted: str) -> bool:
    p = root.joinpath(*dotted.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def _file_of(root: Path, dotted: str) -> Path:
    p = root.joinpath(*dotted.split("."))
    return p / "__init__.py" if (p / "__init__.py").is_file() else p.with_suffix(".py")


def _bound(body: list[ast.stmt]) -> set[str]:
    """Names a module binds at its top level, in `if`/`try`/`with` blocks too (`if TYPE_CHECKING:` imports)."""
    out: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With)):
            targets = node.targets if isinstance(node, ast.Assign) else []
            targets += [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For)) else []
            targets += [i.optional_vars for i in getattr(node, "items", []) if i.optional_vars is not None]
            out |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        for block in ("body", "orelse", "finalbody", "handlers"):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out |= _bound(getattr(node, block, []))
    return out


def _declared(tree: ast.Module) -> Optional[list[str]]:
    """The names in a module's top-level `__all__`, or None where it has none."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return [e.value for e in ast.walk(node.value) if isinstance(e, ast.Constant)]
        if (
            isinstance(node, ast.AnnAssign)
            and ast.unparse(node.target) == "__all__"
            and node.value is not None
        ):
            return [e.value for e in ast.walk(node.value) if isinstance(e, ast.Constant)]
    return None


def check_exports(root: Path) -> list[str]:
    """Every name in a module's `__all__` that the module neither binds nor has as a submodule."""
    problems = []
    for path in sorted((root / "idlehound").rglob("*.py")):
        tree = _tree(path)
        module, is_pkg = _module_name(path, root)
        bound = _bound(tree.body)
        for name in _declared(tree) or []:
            if name not in bound and not (is_pkg and _is_module(root, f"{module}.{name}")):
                problems.append(
                    f"{path.relative_to(root)}: '{name}' is in __all__ but {module} has no such name"
                )
    return problems


def _exported(root: Path, target: str, names: list[str]) -> list[str]:
    """A problem for each name imported from another package's module that is missing from its `__all__`."""
    path = _file_of(root, target)
    declared = _declared(_tree(path)) if path.is_file() else None
    if declared is None:
        return []
    return [f"{target}.{n} is not in {target}.__all__" for n in names if n not in declared and n != "*"]


def check(root: Path, layers: list[tuple[str, set[str]]] = LAYERS) -> list[str]:
    """Every upward or sideways import, cross-package private import, cross-package import of a name missing
    from its module's `__all__`, and module with no layer under root."""
    problems = []
    for path in sorted((root / "idlehound").rglob("*.py")):
        module, is_pkg = _module_name(path, root)
        unit = _unit(module)
        mine = _rank(unit, layers)
        where = path.relative_to(root)
        if mine is None:
            problems.append(
                f"{where}: '{unit}' is in no layer (add it to LAYER_TABLE, then run tools/layer_table.py)"
            )
            continue
        for line, target, names in _imports(_tree(path), module, is_pkg):
            # `from idlehound.analysis import _roles` imports the module idlehound.analysis._roles
            pairs = [
                (target + "." + n, []) if _is_module(root, target + "." + n) else (target, [n]) for n in names
            ]
            for dotted, name in pairs or [(target, [])]:
                problems += _judge(f"{where}:{line}", unit, mine, dotted, name, layers)
                if _unit(dotted) != unit:
                    problems += [
                        f"{where}:{line}: {p}: import only public names"
                        for p in _exported(root, dotted, name)
                    ]
    return sorted(set(problems))


def _judge(
    where: str, unit: str, mine: int, target: str, names: list[str], layers: list[tuple[str, set[str]]]
) -> list[str]:
    other = _unit(target)
    if other == unit:
        return []
    theirs = _rank(other, layers)
    out = []
    if theirs is None or theirs > mine:
        out.append(f"{where}: upward import of {target} ({unit} is below {other})")
    elif theirs == mine:
        out.append(f"{where}: sideways import of {target} ({unit} and {other} stand beside each other)")
    inner = target.split(".")[1:]  # the package, then what follows it
    hidden = [n for n in names if n.startswith("_") and not n.startswith("__")]
    private = [p for p in inner if p.startswith("_") and not p.startswith("__") and p not in SHARED_BASE]
    if private or hidden:
        out.append(
            f"{where}: private name {'.'.join([target, *hidden])} imported across packages "
            f"({unit} -> {other}): import a name from the package's __all__"
        )
    return out


def test_the_package_keeps_its_layers():
    assert check(SRC) == []


def test_every_name_in_all_exists():
    assert check_exports(SRC) == []


def test_the_architecture_doc_shows_this_table():
    """docs/architecture.md's layer table is the one written from LAYER_TABLE by tools/layer_table.py."""
    spec = importlib.util.spec_from_file_location("layer_table", SRC.parent / "tools" / "layer_table.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    doc = tool.DOC.read_text(encoding="utf-8")
    assert tool.with_table(doc, LAYER_TABLE, SRC) == doc, "run: python tools/layer_table.py"
    assert all(f"| {name} |" in doc for name, _, _ in LAYER_TABLE)


def test_every_package_declares_its_public_names():
    missing = [
        str(p.relative_to(SRC))
        for p in sorted((SRC / "idlehound").rglob("__init__.py"))
        if not any(
            isinstance(n, (ast.Assign, ast.AnnAssign)) and "__all__" in ast.unparse(n).split("=")[0]
            for n in _tree(p).body
        )
    ]
    assert missing == []


def _plant(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        p = root / "idlehound" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def test_an_upward_import_is_caught(tmp_path):
    root = _plant(
        tmp_path,
        {
            "__init__.py": "",
            "errors.py": "",
            "trace/__init__.py": "from ..errors import TraceError\n",  # downward: fine
            "trace/_load.py": "def f():\n    from ..report import build  # lazy, still upward\n",
            "report/__init__.py": "from ..trace import load_trace\n",
        },
    )
    assert check(root) == [
        "idlehound/trace/_load.py:2: upward import of idlehound.report (trace is below report)"
    ]


def test_a_private_import_across_packages_is_caught(tmp_path):
    root = _plant(
        tmp_path,
        {
            "__init__.py": "",
            "_limits.py": "",
            "analysis/__init__.py": "",
            "analysis/_roles.py": "",
            "diagnose/__init__.py": "from ..analysis import _roles\nfrom .. import _limits\n",
            "diagnose/x.py": "from ..analysis._roles import KERNEL\nfrom ..analysis import Analysis\nfrom . import _y\n",
        },
    )
    assert check(root) == [
        "idlehound/diagnose/__init__.py:1: private name idlehound.analysis._roles imported across packages "
        "(diagnose -> analysis): import a name from the package's __all__",
        "idlehound/diagnose/x.py:1: private name idlehound.analysis._roles imported across packages "
        "(diagnose -> analysis): import a name from the package's __all__",
    ]


def test_a_missing_export_and_an_import_of_an_unlisted_name_are_caught(tmp_path):
    root = _plant(
        tmp_path,
        {
            "__init__.py": "",
            "errors.py": "",
            "trace/__init__.py": (
                "from typing import TYPE_CHECKING\nfrom ._load import load\nif TYPE_CHECKING:\n"
                "    from ._load import Lazy\nHIDDEN = 1\n__all__ = ['load', 'Lazy', 'gone', 'native']\n"
            ),
            "trace/_load.py": "def load(): ...\nclass Lazy: ...\n",
            "trace/native.py": "__all__ = ['decode']\ndef decode(): ...\ndef helper(): ...\n",
            "diagnose/__init__.py": (
                "from ..trace import load, native\nfrom ..trace import HIDDEN\n"
                "from ..trace.native import decode, helper\nfrom .. import errors\n__all__: list[str] = []\n"
            ),
        },
    )
    assert check_exports(root) == [
        "idlehound/trace/__init__.py: 'gone' is in __all__ but idlehound.trace has no such name"
    ]
    assert check(root) == [
        "idlehound/diagnose/__init__.py:2: idlehound.trace.HIDDEN is not in idlehound.trace.__all__: "
        "import only public names",
        "idlehound/diagnose/__init__.py:3: idlehound.trace.native.helper is not in idlehound.trace.native.__all__: "
        "import only public names",
    ]


def test_sideways_imports_and_unplaced_modules_are_caught(tmp_path):
    root = _plant(
        tmp_path,
        {
            "__init__.py": "",
            "tune/__init__.py": "import idlehound.ladder\n",
            "ladder.py": "",
            "newthing.py": "",
        },
    )
    assert check(root) == [
        "idlehound/newthing.py: 'newthing' is in no layer (add it to LAYER_TABLE, then run tools/layer_table.py)",
        "idlehound/tune/__init__.py:1: sideways import of idlehound.ladder (tune and ladder stand beside each "
        "other)",
    ]
