"""Write a report document to a file, the format chosen by the extension."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Callable, Optional

from ..errors import IdlehoundError
from ..runfolder import is_trace_name
from .model import encode

Renderers = dict[str, Callable[[dict[str, Any]], str]]


def _write(
    doc: dict[str, Any], path: Path, renderers: Renderers, force: bool = False, inputs: Iterable[Path] = ()
) -> Path:
    render = renderers.get(path.suffix.lower())
    if render is None:
        raise IdlehoundError(f"{path}: unknown report format (use .json, .md or .html)")
    check_output(path, force, inputs)
    text = render(doc)
    tmp = path.with_name(f".idlehound-report-{os.getpid()}.tmp")  # short: any name that fits, fits
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")  # whole or not at all: a reader (a --watch window's report,
        os.replace(tmp, path)  # read while the job's child writes it) never sees half a report
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise IdlehoundError(f"{path}: cannot write the report ({e.strerror or e})") from None
    return path


def check_output(path: Path, force: bool, inputs: Iterable[Path] = ()) -> None:
    """Never overwrite an input or a trace; overwrite any other existing file only when forced."""
    try:
        exists = path.exists() or path.is_symlink()
        if not exists:
            return
        if path.is_dir():
            raise IdlehoundError(f"{path}: is a folder; give a file name for the report")
        if any(p.exists() and path.samefile(p) for p in inputs) or is_trace_name(path.name):
            raise IdlehoundError(f"{path}: is the input trace; write the report elsewhere")
    except OSError as e:  # a name too long, a component that is a file, no permission
        raise IdlehoundError(f"{path}: cannot write the report ({e.strerror or e})") from None
    if not force:
        raise IdlehoundError(f"{path}: already exists; use --force to overwrite it")


def _json(doc: dict[str, Any]) -> str:
    return encode(doc)


def write_report(
    doc: dict[str, Any],
    path: Path,
    force: bool = False,
    inputs: Iterable[Path] = (),
    step_curve: Optional[dict[str, Any]] = None,
) -> Path:
    """Write the report; an existing file is kept unless force, and an input never overwritten.

    step_curve: the whole run's step times and windows, drawn in the HTML (report/_curve.py)."""
    from .html import render_html
    from .markdown import render_markdown

    return _write(
        doc,
        path,
        {
            ".json": _json,
            ".md": render_markdown,
            ".markdown": render_markdown,
            ".html": lambda d: render_html(d, step_curve),
            ".htm": lambda d: render_html(d, step_curve),
        },
        force,
        inputs,
    )


def write_compare(doc: dict[str, Any], path: Path, force: bool = False, inputs: Iterable[Path] = ()) -> Path:
    from .compare import render_compare_markdown
    from .html import render_compare_html

    return _write(
        doc,
        path,
        {
            ".json": _json,
            ".md": render_compare_markdown,
            ".markdown": render_compare_markdown,
            ".html": render_compare_html,
            ".htm": render_compare_html,
        },
        force,
        inputs,
    )


def write_ranks(doc: dict[str, Any], path: Path, force: bool = False, inputs: Iterable[Path] = ()) -> Path:
    from .ranks import render_ranks_html

    return _write(
        doc, path, {".json": _json, ".html": render_ranks_html, ".htm": render_ranks_html}, force, inputs
    )
