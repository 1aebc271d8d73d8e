"""The HTML report as a fragment for a notebook cell: report.html's body in one element, its CSS scoped to it.

Jupyter puts an output's HTML inside its own page, so the report's page-wide rules (body, h1, table...) would
restyle the whole notebook: each selector is prefixed with the fragment's class instead. The body is the HTML
report's own template (the same escaping and charts), laid out in templates/_fragment.html instead of a page.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Union

from markupsafe import Markup

from . import model as m
from .html import _CSS, render_page, report_values
from .model import typed

SCOPE = "idlehound-report"  # the class of the fragment's outer element (templates/_fragment.html)


def scoped_css(css: str, scope: str = SCOPE) -> str:
    """Prefix every selector of plain `selectors{declarations}` rules with `.scope` (`body` becomes it)."""
    out = []
    for rule in css.split("}"):
        selectors, brace, body = rule.partition("{")
        if not brace:
            continue
        scoped = [
            f".{scope}" if s.strip() == "body" else f".{scope} {s.strip()}"
            for s in selectors.split(",")
            if s.strip()
        ]
        out.append(",".join(scoped) + "{" + body + "}")
    return "\n".join(out)


def render_html_fragment(doc: Union[m.Report, Mapping[str, Any]]) -> str:
    """The report for Jupyter's `_repr_html_`: headline, metrics, charts and findings in one element."""
    # The CSS is this package's constant (as the page's), the one value the template does not escape.
    return render_page(
        "report.html",
        layout="_fragment.html",
        scoped_css=Markup(scoped_css(_CSS)),
        **report_values(typed(doc, m.Report)),
    )
