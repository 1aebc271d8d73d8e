"""Facts shared between the files linted together that import one another (one hop; packages pass through).

A helper module (`train_utils.py`) runs on the GPU of the script that imports it, after that script's pinned
loader; a model file's convolutions run under that script's cudnn settings.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

from ._rules import Facts


def _module_paths(name: str, roots: list[Path]) -> list[Path]:
    parts = name.split(".") if name else []
    out = []
    for root in roots:
        base = root.joinpath(*parts) if parts else root
        out += [base.with_name(base.name + ".py") if parts else base / "__init__.py", base / "__init__.py"]
    return out


def imported_files(path: Path, tree: ast.Module, known: set[Path]) -> set[Path]:
    """Files among `known` that this file imports: `import a.b`, `from a import b`, `from .b import c`; absolute
    names are looked up beside the file and in its two parent folders (where scripts are usually run from)."""
    here = path.parent
    out: set[Path] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            names, roots = [a.name for a in n.names], [here, here.parent, here.parent.parent]
        elif isinstance(n, ast.ImportFrom):
            up = here
            for _ in range(n.level - 1):
                up = up.parent
            roots = [up] if n.level else [here, here.parent, here.parent.parent]
            module = n.module or ""
            names = [module] + [f"{module}.{a.name}" if module else a.name for a in n.names]
        else:
            continue
        for name in names:
            out |= {p for p in _module_paths(name, roots) if p in known}
    out.discard(path)
    return out


def shared_facts(trees: dict[Path, ast.Module], facts: dict[Path, Facts]) -> dict[Path, Optional[Facts]]:
    """For each file, the facts of the files it imports and of those importing it (through package __init__s)."""
    known = set(trees)
    imports = {p: imported_files(p, t, known) for p, t in trees.items()}
    for _ in range(3):  # a package's __init__ passes its own imports on
        for p in imports:
            imports[p] |= {q for i in list(imports[p]) if i.name == "__init__.py" for q in imports[i]} - {p}
    out: dict[Path, Optional[Facts]] = {}
    for p in trees:
        near = imports[p] | {q for q in trees if p in imports[q]}
        merged: Optional[Facts] = None
        for q in near:
            merged = facts[q] if merged is None else merged | facts[q]
        out[p] = merged
    return out
