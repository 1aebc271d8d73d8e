"""Lint snippets written in a test: one file's (rule, line) pairs, or a small project laid out on disk."""

from __future__ import annotations

import textwrap
from pathlib import Path

from idlehound.lint import lint_paths


def found(tmp_path: Path, source: str, name: str = "t.py") -> list[tuple[str, int]]:
    f = tmp_path / name
    f.write_text(textwrap.dedent(source))
    return sorted((x.rule, x.line) for x in lint_paths([f]))


def project(root: Path, files: dict[str, str]) -> Path:
    """Write files (relative path -> dedented text) under root, marked as a clone's root by a .git folder."""
    (root / ".git").mkdir(parents=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root
