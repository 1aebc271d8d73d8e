"""Write the report document to a file, the format chosen by the extension."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import IdlehoundError


def write_report(doc: dict[str, Any], path: Path) -> Path:
    suffix = path.suffix.lower()
    if suffix == ".json":
        text = json.dumps(doc, indent=2)
    elif suffix in (".md", ".markdown"):
        from .markdown import render_markdown

        text = render_markdown(doc)
    elif suffix in (".html", ".htm"):
        from .html import render_html

        text = render_html(doc)
    else:
        raise IdlehoundError(f"{path}: unknown report format (use .json, .md or .html)")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_compare(doc: dict[str, Any], path: Path) -> Path:
    from ..compare import render_compare_markdown

    suffix = path.suffix.lower()
    if suffix == ".json":
        text = json.dumps(doc, indent=2)
    elif suffix in (".md", ".markdown"):
        text = render_compare_markdown(doc)
    elif suffix in (".html", ".htm"):
        from .html import render_compare_html

        text = render_compare_html(doc)
    else:
        raise IdlehoundError(f"{path}: unknown report format (use .json, .md or .html)")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
