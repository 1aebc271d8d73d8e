"""`write`: any document (report, compare, ranks, lint, ladder, tune) to a file, in the format its extension names."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Optional, Union

from ..errors import IdlehoundError
from ..runfolder import is_trace_name
from . import model as m
from .model import as_struct, encode

Document = m.Document  # a report, compare, ranks, lint, ladder or tune document
FORMATS = {".json": "json", ".md": "md", ".markdown": "md", ".html": "html", ".htm": "html"}


def write(
    doc: Union[Document, Mapping[str, Any]],
    path: Path,
    fmt: Optional[str] = None,
    *,
    force: bool = False,
    inputs: Iterable[Path] = (),
    step_curve: Optional[dict[str, Any]] = None,
) -> Path:
    """Write any document to a file: JSON, markdown or HTML, chosen by `fmt` ("json", "md", "html") or else by
    the file's extension. An existing file is kept unless force, and an input or a trace never overwritten.

    doc: a document's Struct, or its plain data (a JSON document read back: its `schema` names its kind).
    step_curve: the whole run's step times and windows, drawn in an analysis report's HTML (report/_curve.py)."""
    struct = as_struct(doc)  # plain data is checked against its Struct even when written back as JSON
    fmt = fmt or FORMATS.get(path.suffix.lower())
    if fmt is None or fmt not in formats_of(struct):
        raise IdlehoundError(f"{path}: unknown report format (use .json, .md or .html)")
    check_output(path, force, inputs)
    # plain data as JSON: its own text (the Struct would spell a whole number in a float field 90.0, not 90)
    text = encode(doc) if fmt == "json" and isinstance(doc, Mapping) else render_as(struct, fmt, step_curve)
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


def formats_of(doc: Document) -> tuple[str, ...]:
    """The file formats a document is written in (every document has JSON; ranks no markdown, lint only JSON)."""
    if isinstance(doc, m.Lint):
        return ("json",)
    return ("json", "html") if isinstance(doc, m.Ranks) else ("json", "md", "html")


# The renderer of each document kind in each format other than JSON, by its name in this package (which loads
# it on first use: rich and jinja2 are slow to import). An analysis report's HTML also takes the step curve.
_RENDERERS: dict[tuple[type[Any], str], str] = {
    (m.Report, "md"): "render_markdown",
    (m.Compare, "md"): "render_compare_markdown",
    (m.Tune, "md"): "tune_markdown",
    (m.Ladder, "md"): "ladder_markdown",
    (m.Ranks, "html"): "render_ranks_html",
    (m.Tune, "html"): "tune_html",
    (m.Compare, "html"): "render_compare_html",
    (m.Ladder, "html"): "render_ladder_html",
}


def render_as(doc: Document, fmt: str, step_curve: Optional[dict[str, Any]] = None) -> str:
    """A document's text in one format: "json", "md" or "html", by the document's kind."""
    from .. import report

    if fmt == "json":
        return encode(doc)
    if fmt == "html" and isinstance(doc, m.Report):
        return report.render_html(doc, step_curve)
    name = _RENDERERS.get((type(doc), fmt))
    if name is None:
        raise ValueError(f"a {type(doc).__name__} document has no {_FORMAT_NAMES.get(fmt, fmt)}")
    render: Callable[[Any], str] = getattr(report, name)
    return render(doc)


_FORMAT_NAMES = {"md": "markdown", "html": "HTML"}


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
