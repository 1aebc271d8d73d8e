"""One-way layers: a module imports only from its own package or from a lower layer, and across packages only
public names (docs/architecture.md). Read from the source with ast: nothing is imported or run."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

SRC = Path(__file__).resolve().parent.parent / "src"

# Lowest first. A module may import from its own package, from anything in a lower layer, and from nothing in
# its own layer's other packages or above: packages that share a layer stand beside each other.
LAYERS: list[tuple[str, set[str]]] = [
    ("base", {"errors", "_version", "metrics", "_startup", "vocabulary"}),
    ("settings", {"settings"}),  # the IDLEHOUND_* environment variables, read and checked in one place
    ("base helpers", {"_paths", "_limits", "sampler"}),
    ("run folder", {"runfolder"}),
    ("trace", {"trace"}),
    ("analysis", {"analysis"}),
    ("capture", {"capture"}),
    ("diagnose", {"diagnose"}),
    ("report", {"report"}),
    ("result", {"result"}),  # what idlehound.analyze() returns: an Analysis with its findings and renderers
    ("pipeline", {"pipeline", "compare"}),
    ("workloads", {"workloads"}),
    ("tools", {"distributed", "lint", "tune", "ladder", "doctor"}),
    ("app", {"app"}),
    ("entry points", {"cli", "integrations", "__init__"}),  # __init__: the idlehound package itself
    ("python -m idlehound", {"__main__"}),
]
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


def check(root: Path, layers: list[tuple[str, set[str]]] = LAYERS) -> list[str]:
    """Every upward or sideways import, cross-package private import and module with no layer under root."""
    problems = []
    for path in sorted((root / "idlehound").rglob("*.py")):
        module, is_pkg = _module_name(path, root)
        unit = _unit(module)
        mine = _rank(unit, layers)
        where = path.relative_to(root)
        if mine is None:
            problems.append(f"{where}: '{unit}' is in no layer (add it to LAYERS and docs/architecture.md)")
            continue
        for line, target, names in _imports(ast.parse(path.read_text(encoding="utf-8")), module, is_pkg):
            # `from idlehound.analysis import _roles` imports the module idlehound.analysis._roles
            pairs = [
                (target + "." + n, []) if _is_module(root, target + "." + n) else (target, [n]) for n in names
            ]
            for dotted, name in pairs or [(target, [])]:
                problems += _judge(f"{where}:{line}", unit, mine, dotted, name, layers)
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


def test_every_package_declares_its_public_names():
    missing = [
        str(p.relative_to(SRC))
        for p in sorted((SRC / "idlehound").rglob("__init__.py"))
        if not any(
            isinstance(n, (ast.Assign, ast.AnnAssign)) and "__all__" in ast.unparse(n).split("=")[0]
            for n in ast.parse(p.read_text(encoding="utf-8")).body
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
        "idlehound/newthing.py: 'newthing' is in no layer (add it to LAYERS and docs/architecture.md)",
        "idlehound/tune/__init__.py:1: sideways import of idlehound.ladder (tune and ladder stand beside each "
        "other)",
    ]
