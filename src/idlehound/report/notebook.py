"""The HTML report as a fragment for a notebook cell: the page's body, its CSS scoped to the fragment.

Jupyter puts an output's HTML inside its own page, so the report's page-wide rules (body, h1, table...) would
restyle the whole notebook: each selector is prefixed with the fragment's class instead. The body is the HTML
report's own (the same template, escaping and charts), less the embedded JSON copy of the document.
"""

from __future__ import annotations

import re
from typing import Any

from .html import render_html

SCOPE = "idlehound-report"
_STYLE = re.compile(r"<style>(.*?)</style>", re.S)
_BODY = re.compile(r"<body>(.*)</body>", re.S)
_DATA = re.compile(r"<script type='application/json' id='idlehound-data'>.*?</script>", re.S)


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


def render_html_fragment(doc: dict[str, Any]) -> str:
    """The report for Jupyter's `_repr_html_`: headline, metrics, charts and findings in one <div>."""
    page = render_html(doc)
    style, body = _STYLE.search(page), _BODY.search(page)
    if style is None or body is None:  # the templates' own shape; a change there must be seen in tests
        raise ValueError("report.html no longer has one <style> and one <body>")
    inner = _DATA.sub("", body.group(1))
    return f"<div class='{SCOPE}'><style>{scoped_css(style.group(1))}</style>{inner}</div>"
