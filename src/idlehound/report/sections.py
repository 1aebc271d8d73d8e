"""Sections added to the analysis report: a titled table each, in the terminal, markdown, HTML and JSON alike.

A section is a function of the analysis and its findings that returns its table (an `m.Section`) or None when
it has nothing to show; registered with `@section("name")`, it is in every report built after that, under
`sections.name` in the JSON. The renderers draw every section the same way (terminal.py, markdown.py,
templates/report.html), so a new one needs no renderer of its own: CONTRIBUTING.md, "Adding a report section".
While none is registered, the document has no `sections` key and reads as before.
"""

from __future__ import annotations

from typing import Callable, Optional

from ..analysis import Analysis
from ..diagnose import Finding
from . import model as m

Builder = Callable[[Analysis, list[Finding]], Optional[m.Section]]
_SECTIONS: dict[str, Builder] = {}


def section(name: str) -> Callable[[Builder], Builder]:
    """Register a section builder under `name` (its key in the JSON's `sections`)."""

    def register(build: Builder) -> Builder:
        if name in _SECTIONS:
            raise ValueError(f"a report section named {name!r} is already registered")
        _SECTIONS[name] = build
        return build

    return register


def unregister(name: str) -> None:
    """Take a section out again (a test's own section, once the test is done)."""
    _SECTIONS.pop(name, None)


def build_sections(a: Analysis, findings: list[Finding]) -> dict[str, m.Section]:
    """Every registered section that has something to show, in the order they were registered."""
    out = {}
    for name, build in _SECTIONS.items():
        table = build(a, findings)
        if table is not None:
            out[name] = table
    return out


def cell_text(v: m.Cell) -> str:
    """A cell as every renderer writes it: a float with 3 decimals (the builder rounds it so: model.rnd), '—'
    for none."""
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)
