"""Lint a snippet written in a test: the (rule, line) pairs it reports, sorted."""

from __future__ import annotations

import textwrap
from pathlib import Path

from idlehound.lint import lint_paths


def found(tmp_path: Path, source: str, name: str = "t.py") -> list[tuple[str, int]]:
    f = tmp_path / name
    f.write_text(textwrap.dedent(source))
    return sorted((x.rule, x.line) for x in lint_paths([f]))
