"""Write a report document to a file, the format chosen by the extension."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from ..errors import IdlehoundError

Renderers = dict[str, Callable[[dict[str, Any]], str]]


def _write(doc: dict[str, Any], path: Path, renderers: Renderers) -> Path:
    render = renderers.get(path.suffix.lower())
    if render is None:
        raise IdlehoundError(f"{path}: unknown report format (use .json, .md or .html)")
    text = render(doc)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2)


def write_report(doc: dict[str, Any], path: Path) -> Path:
    from .html import render_html
    from .markdown import render_markdown

    return _write(doc, path, {".json": _json, ".md": render_markdown, ".markdown": render_markdown,
                              ".html": render_html, ".htm": render_html})


def write_compare(doc: dict[str, Any], path: Path) -> Path:
    from ..compare import render_compare_markdown
    from .html import render_compare_html

    return _write(doc, path, {".json": _json, ".md": render_compare_markdown,
                              ".markdown": render_compare_markdown, ".html": render_compare_html,
                              ".htm": render_compare_html})


def write_ranks(doc: dict[str, Any], path: Path) -> Path:
    from ..distributed import render_ranks_html

    return _write(doc, path, {".json": _json, ".html": render_ranks_html, ".htm": render_ranks_html})
