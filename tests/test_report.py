"""Markdown and HTML carry the JSON's numbers; every printed metric has a definition in docs/metrics.md."""

import html
import json
import re

from idlehound.diagnose._registry import IDLE_CAUSE_DEFINITIONS as IDLE_CAUSES
from idlehound.metrics import BREAKDOWN_DEFINITION, METRICS
from idlehound.pipeline import analyze_path
from idlehound.report.html import fmt_metric, render_html
from idlehound.report.markdown import render_markdown

from .conftest import ROOT, TRACES


def test_docs_define_every_metric_with_the_same_text():
    docs = (ROOT / "docs" / "metrics.md").read_text()
    flat = " ".join(docs.split())
    for m in METRICS.values():
        assert " ".join(m.definition.split()) in flat, m.key
        assert f"`{m.key}`" in docs
    for text in IDLE_CAUSES.values():
        assert " ".join(text.split()) in flat
    assert " ".join(BREAKDOWN_DEFINITION.split()) in flat


def test_html_is_self_contained_and_matches_json():
    res = analyze_path(TRACES / "sync_item")
    doc = res.doc
    page = render_html(res.report)
    assert "http://" not in page and "https://" not in page  # opens offline
    embedded = json.loads(re.search(r"id='idlehound-data'>(.*?)</script>", page, re.S).group(1))
    assert embedded["headline"] == doc["headline"]
    for key, m in res.report.metrics.items():
        if m.value is not None:
            card = re.search(rf"data-metric='{key}'><div class='v'>(.*?)</div>", page).group(1)
            assert html.unescape(card) == fmt_metric(m)
    assert "<svg id='breakdown-chart'" in page and "<svg id='timeline'" in page
    assert html.escape(METRICS["gpu_util"].definition, quote=True) in page


def test_markdown_matches_json():
    doc = analyze_path(TRACES / "dataloader_bound").doc
    md = render_markdown(doc)
    assert doc["headline"] in md
    f = doc["findings"][0]
    assert f"{f['recoverable_ms_per_step']:.3f} ms per step" in md
    assert f"{doc['metrics']['gpu_util']['value']:.1f} %" in md


def test_write_takes_the_format_from_fmt_or_the_extension_and_a_plain_document_too(tmp_path):
    import pytest

    from idlehound.errors import IdlehoundError
    from idlehound.report import encode, write

    res = analyze_path(TRACES / "sync_item")
    md = write(res.report, tmp_path / "summary.txt", "md")  # fmt over the extension
    assert md.read_text(encoding="utf-8") == render_markdown(res.report)
    back = write(res.doc, tmp_path / "again.json")  # the plain data, read as its Struct by its schema
    assert back.read_text(encoding="utf-8") == encode(res.report)
    with pytest.raises(IdlehoundError, match="unknown report format"):
        write(res.report, tmp_path / "report.txt")
