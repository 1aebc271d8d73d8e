"""Reports: terminal (rich), JSON, markdown, HTML and TensorBoard, all from one report document.

report/model.py types every output document (msgspec Structs); `encode` writes their JSON text and `validate`
reads it back strictly. Builders return these Structs; every renderer of every document (report, compare, ranks,
lint, ladder, tune) lives here and takes them, and `write(doc, path)` writes any of them as JSON, markdown or
HTML. Other packages use only the names in __all__. The renderers load on first use (PEP 562), so
building a document does not import rich or jinja2.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._data import SCHEMA, SCHEMA_VERSION, build, build_model, check_document, headline, to_json
from .model import DOCUMENTS, encode, validate

if TYPE_CHECKING:  # the lazy names' types, for mypy; at run time __getattr__ loads them
    from ._curve import sparkline
    from ._escape import (
        inert,
        md_code,
        md_fence,
        md_text,
        visible,
    )
    from ._format import metric_text, num
    from .annotated import annotation_events, check_annotated_output, is_annotated_name, write_annotated
    from .compare import render_compare, render_compare_markdown
    from .files import (
        Document,
        check_output,
        render_as,
        write,
    )
    from .html import (
        fmt_metric,
        render_compare_html,
        render_html,
        render_ladder_html,
        render_page,
    )
    from .ladder import (
        ladder_markdown,
        ladder_table_rows,
        render_ladder,
    )
    from .lint import LINT_FORMATS, LintRuleText, annotation, render_lint, sarif_log
    from .markdown import render_markdown
    from .notebook import render_html_fragment
    from .ranks import (
        ranks_title,
        render_ranks,
        render_ranks_html,
    )
    from .tensorboard import (
        scalars_of,
        write_ladder_scalars,
        write_scalars,
    )
    from .terminal import render
    from .tune import render_tune, set_candidate_names, tune_html, tune_markdown

_LAZY = {  # public name -> the module of this package that defines it
    "render": "terminal",
    "annotation_events": "annotated",
    "check_annotated_output": "annotated",
    "is_annotated_name": "annotated",
    "write_annotated": "annotated",
    "render_markdown": "markdown",
    "render_html_fragment": "notebook",
    "render_html": "html",
    "render_compare_html": "html",
    "render_ladder_html": "html",
    "render_page": "html",
    "fmt_metric": "html",
    "render_compare": "compare",
    "render_compare_markdown": "compare",
    "ranks_title": "ranks",
    "render_ranks": "ranks",
    "render_ranks_html": "ranks",
    "render_ladder": "ladder",
    "ladder_markdown": "ladder",
    "ladder_table_rows": "ladder",
    "check_output": "files",
    "write": "files",
    "render_as": "files",
    "Document": "files",
    "scalars_of": "tensorboard",
    "write_scalars": "tensorboard",
    "write_ladder_scalars": "tensorboard",
    "inert": "_escape",
    "visible": "_escape",
    "md_code": "_escape",
    "md_fence": "_escape",
    "md_text": "_escape",
    "num": "_format",
    "metric_text": "_format",
    "sparkline": "_curve",
    "render_tune": "tune",
    "tune_markdown": "tune",
    "tune_html": "tune",
    "set_candidate_names": "tune",
    "annotation": "lint",
    "render_lint": "lint",
    "sarif_log": "lint",
    "LINT_FORMATS": "lint",
    "LintRuleText": "lint",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [  # the eager names and _LAZY's (tests/test_report_lazy_names.py keeps them in step)
    "DOCUMENTS",
    "Document",
    "LINT_FORMATS",
    "LintRuleText",
    "SCHEMA",
    "SCHEMA_VERSION",
    "annotation",
    "annotation_events",
    "build",
    "build_model",
    "check_annotated_output",
    "check_document",
    "check_output",
    "encode",
    "fmt_metric",
    "headline",
    "inert",
    "is_annotated_name",
    "ladder_markdown",
    "ladder_table_rows",
    "md_code",
    "md_fence",
    "md_text",
    "metric_text",
    "num",
    "ranks_title",
    "render",
    "render_as",
    "render_compare",
    "render_compare_html",
    "render_compare_markdown",
    "render_html",
    "render_html_fragment",
    "render_ladder",
    "render_ladder_html",
    "render_lint",
    "render_markdown",
    "render_page",
    "render_ranks",
    "render_ranks_html",
    "render_tune",
    "sarif_log",
    "scalars_of",
    "set_candidate_names",
    "sparkline",
    "to_json",
    "tune_html",
    "tune_markdown",
    "validate",
    "visible",
    "write",
    "write_annotated",
    "write_ladder_scalars",
    "write_scalars",
]
