"""CONTRIBUTING.md's recipe "a report section", followed literally: one function registered with @section in
report/sections.py's registry (here a test-only section, registered by the test and taken out after) is in the
terminal, markdown, HTML and JSON of a recorded trace's report, with no renderer or template edited."""

import io
import json
import re

import pytest
from rich.console import Console

from idlehound.pipeline import analyze_path
from idlehound.report import encode, render, render_markdown, validate, write
from idlehound.report import model as m
from idlehound.report.model import rnd
from idlehound.report.sections import section, unregister

from .conftest import TRACES


@pytest.fixture
def slowest_steps():
    """Step 1 of the recipe: the section's builder, registered under its name."""

    @section("slowest_steps")
    def build(a, findings):
        steps = sorted(a.steps, key=lambda s: -s.duration_ns)[:2]
        if not steps:
            return None
        return m.Section(
            title="Slowest profiled steps",
            columns=["step", "ms"],
            rows=[[s.number, rnd(s.duration_ns / 1e6)] for s in steps],
        )

    yield
    unregister("slowest_steps")


def test_a_section_added_by_the_recipe_is_in_the_terminal_markdown_html_and_json(slowest_steps, tmp_path):
    res = analyze_path(TRACES / "sync_item")
    doc = json.loads(encode(res.report))
    rows = doc["sections"]["slowest_steps"]["rows"]
    # the figures are the steps table's own durations, the slowest first
    by_number = {s["number"]: s["duration_ms"] for s in doc["steps"]}
    assert len(rows) == 2 and [ms for _, ms in rows] == sorted(by_number.values(), reverse=True)[:2]
    assert all(by_number[n] == ms for n, ms in rows)
    assert (
        validate(encode(res.report), "report").sections["slowest_steps"].rows == rows
    )  # the schema reads it

    out = io.StringIO()
    render(res.report, Console(file=out, width=120, color_system=None))
    text = out.getvalue()
    assert "Slowest profiled steps" in text
    assert all(re.search(rf"\b{n}\b.*\b{ms:.3f}\b", text) for n, ms in rows)

    md = render_markdown(res.report)
    assert "## Slowest profiled steps" in md and "| step | ms |" in md
    assert all(f"| {n} | {ms:.3f} |" in md for n, ms in rows)

    page = write(res.report, tmp_path / "report.html").read_text(encoding="utf-8")
    table = page[page.index("data-section='slowest_steps'") :]
    table = table[: table.index("</table>")]
    assert "Slowest profiled steps" in table
    assert all(f"<td>{n}</td><td>{ms:.3f}</td>" in table for n, ms in rows)


def test_without_a_section_the_document_has_no_sections_key():
    doc = json.loads(encode(analyze_path(TRACES / "sync_item").report))
    assert "sections" not in doc and "## " + "Slowest" not in render_markdown(doc)
