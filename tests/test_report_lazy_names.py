"""report/__init__ loads its renderers on first use (PEP 562) and types them for mypy with an `if TYPE_CHECKING:`
import of each. The loading table (_LAZY), those imports and __all__ must name the same things: a name missing
from the imports is an untyped Any to every caller (mypy: "Any? not callable"), one missing from the table fails
at run time although mypy passed."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import idlehound.report as report

INIT = Path(report.__file__)
TREE = ast.parse(INIT.read_text(encoding="utf-8"))


def _typed_imports() -> dict[str, str]:
    """{name: module} of the imports under `if TYPE_CHECKING:`."""
    block = next(n for n in TREE.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    return {a.name: imp.module for imp in block.body if isinstance(imp, ast.ImportFrom) for a in imp.names}


def _eager_names() -> set[str]:
    """Names the package imports from its own modules when it loads."""
    own = [n for n in TREE.body if isinstance(n, ast.ImportFrom) and n.level == 1]
    return {a.asname or a.name for imp in own for a in imp.names}


def test_every_lazy_name_is_typed_for_mypy():
    assert _typed_imports() == report._LAZY


def test_all_lists_the_eager_and_the_lazy_names_once():
    assert len(report.__all__) == len(set(report.__all__))
    assert set(report.__all__) == _eager_names() | set(report._LAZY)
    assert not _eager_names() & set(report._LAZY)


@pytest.mark.slow  # starts a fresh Python process
def test_the_renderers_load_on_first_use_from_their_modules():
    """In a fresh interpreter: importing the package loads no renderer (nor rich or jinja2); each lazy name then
    is the object its module defines."""
    code = (
        "import importlib, sys\n"
        "import idlehound.report as r\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'jinja2')"
        " or m.startswith('idlehound.report.') and m.rsplit('.', 1)[1] in set(r._LAZY.values()))\n"
        "assert loaded == [], loaded\n"
        "for name, mod in r._LAZY.items():\n"
        "    assert getattr(r, name) is getattr(importlib.import_module('idlehound.report.' + mod), name), name\n"
        "print(len(r._LAZY))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(len(report._LAZY))
