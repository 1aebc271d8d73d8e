"""The code change that makes a winning combination permanent: a unified diff where the lines can be found."""

from __future__ import annotations

import ast
import difflib
from pathlib import Path
from typing import Any

from ._changes import CHANGES
from ._source import SourceEdits


def make_diff(
    script: Path, settings: dict[str, Any], graphed_inputs: list[dict[str, Any]] | None = None
) -> tuple[str, list[str]]:
    """(unified diff, snippets for what could not be placed in the file)."""
    source = script.read_text(encoding="utf-8")
    new, snippets = changed_source(source, settings, graphed_inputs)
    diff = "".join(
        difflib.unified_diff(
            source.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"a/{script.name}",
            tofile=f"b/{script.name}",
        )
    )
    return diff, snippets if diff else [s for s in snippets if not s.startswith("# ")]


def changed_source(
    source: str, settings: dict[str, Any], graphed_inputs: list[dict[str, Any]] | None = None
) -> tuple[str, list[str]]:
    """(the script with the changes made, snippets for what could not be placed in it)."""
    tree = ast.parse(source)
    src = SourceEdits(source, tree, settings, graphed_inputs)
    for key, change in CHANGES.items():  # each change makes its own edit (_changes)
        if settings.get(key):
            change.edit(settings[key], src)
    edits, snippets, notes, header = src.edits, src.snippets, src.notes, src.header
    new = source
    unique = list(dict.fromkeys(edits))  # one dict shared by two calls is edited once
    # from the end, so offsets hold; insertions at one place keep their order
    for _, (start, end, text) in sorted(
        enumerate(unique), key=lambda ie: (ie[1][0], ie[1][1], ie[0]), reverse=True
    ):
        new = new[:start] + text + new[end:]
    if header:
        imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        at = imports[-1].end_lineno if imports else 0
        lines = new.splitlines(keepends=True)
        lines[at:at] = [h + "  # idlehound tune\n" for h in header]
        new = "".join(lines)
    if notes:
        snippets.append("\n".join(f"# {n}" for n in dict.fromkeys(notes)))
    return new, snippets
