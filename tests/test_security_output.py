"""A trace is data: names in it reach every output as inert text (issue 14, item 3).

A recorded trace is rewritten so that every string that reaches a report (kernel and op names, Python frame file
and function names, thread and process names, the device name, the trace name, the file and folder names, and
`distributedInfo`) carries HTML, rich markup, markdown and terminal escape payloads. The terminal, JSON, markdown
and HTML outputs must show the payload as text and obey none of it.
"""

import copy
import gzip
import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import msgspec
import pytest
from markdown_it import MarkdownIt

from idlehound.compare import compare_docs
from idlehound.distributed import analyze_ranks
from idlehound.pipeline import analyze_path
from idlehound.report import ladder_markdown, render_compare_markdown, render_ranks_html, write
from idlehound.report._escape import md_code, md_fence, md_text, visible
from idlehound.report.html import render_compare_html, render_html, render_ladder_html
from idlehound.report.markdown import render_markdown
from idlehound.report.tune import tune_html, tune_markdown

from .conftest import ROOT, TRACES

# Each payload would do something if obeyed: run a script that marks <body>, break out of a single- or
# double-quoted attribute, make a rich link or style, crash rich ('[/]' closes nothing), colour the terminal,
# open an OSC 8 hyperlink, make a markdown link to javascript:, open a code span, split a table row.
MARK = "document.body.setAttribute('data-pwned','{}')"
PAYLOAD = (
    f'[/]<script>{MARK.format("script")}</script>"><img src=x onerror="{MARK.format("img2")}">'
    f'\'><img src=x onerror="{MARK.format("img1")}">[link=https://evil.example]x[/link][bold]'
    "\x1b[31m\x1b]8;;http://evil.example\x07[x](javascript:alert(1))`|"
)
# A newline could fake a line of output or a markdown heading. (Not in frame names: analysis reads those
# line-wise, and a frame it cannot parse loses its finding, which would leave this test less to check.)
NL_PAYLOAD = PAYLOAD + "\n# heading"
# File and folder names cannot hold '/': the parts of the payload that fit.
FILE_PAYLOAD = "w'\"><img src=x onerror=alert(4)>[bold]\x1b[31m"
DIR_PAYLOAD = "r<img src=x onerror=alert(5)>[link=https:evil]x[link]"
LITERAL = [
    "[link=https://evil.example]x[/link]",
    "[/]<script>",
    "\\x1b[31m",
    "\\x1b]8;;http://evil.example\\x07",
    "[x](javascript:alert(1))",
]
FRAME = re.compile(r"^(.*)\.py\((\d+)\): (.*)$")


def _craft(src, dst, top=None):
    """Copy a recorded trace with the payload in every name that reaches a report."""
    d = json.loads(gzip.decompress(src.read_bytes()))
    for e in d["traceEvents"]:
        cat, name = e.get("cat"), e.get("name")
        if cat == "python_function":
            m = FRAME.match(name)
            if m:  # the payload as a folder in the frame's file, and after its function name
                head, _, base = m.group(1).rpartition("/")
                e["name"] = f"{head}/{PAYLOAD}/{base}.py({m.group(2)}): {m.group(3)}{PAYLOAD}"
            else:
                e["name"] = name + PAYLOAD
        elif cat in ("cpu_op", "user_annotation") and not name.startswith("ProfilerStep"):
            e["name"] = name + PAYLOAD
        elif cat == "kernel":
            e["name"] = name + NL_PAYLOAD
        elif e.get("ph") == "M" and name in ("thread_name", "process_name"):
            e["args"]["name"] = NL_PAYLOAD
    d["deviceProperties"][0]["name"] += (
        "\n# heading" + PAYLOAD
    )  # names are cut at 200 characters: newline first
    d["traceName"] = NL_PAYLOAD
    d.update(top or {})
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(gzip.compress(json.dumps(d).encode()))
    return dst


def _recorded(name):
    return next((TRACES / name).glob("*.pt.trace.json.gz"))


@pytest.fixture(scope="module")
def crafted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("crafted") / DIR_PAYLOAD
    _craft(
        _recorded("sync_item"),
        folder / f"{FILE_PAYLOAD}.17.pt.trace.json.gz",
        {
            "distributedInfo": {
                "backend": PAYLOAD,
                "rank": "<img src=x onerror=alert(1)>",
                "world_size": "<img src=x onerror=alert(2)>",
            }
        },
    )
    return folder


@pytest.fixture(scope="module")
def doc(crafted):
    d = analyze_path(crafted).doc
    # the payload reached the document through the fields this test is about
    assert "\n# heading[/]<script>" in d["device"]["name"] and FILE_PAYLOAD in d["trace"]["path"]
    # kernel names lose their <template> and (argument) parts when grouped; the rest of the payload stays
    assert any(
        "\"'[link=https://evil.example]x[/link]" in k["name"] and "\x1b" in k["name"]
        for k in d["kernels"]["top"]
    )
    assert d["findings"] and PAYLOAD in d["findings"][0]["location"]["file"]
    assert any(PAYLOAD in e for e in d["findings"][0]["evidence"]) and d["idle_by_line"]
    return d


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ranks") / DIR_PAYLOAD
    for i, name in enumerate(["sync_item", "healthy"]):
        _craft(
            _recorded(name),
            folder / f"rank{i}{FILE_PAYLOAD}.1.pt.trace.json.gz",
            {
                "distributedInfo": {
                    "backend": PAYLOAD,
                    "rank": f"<img src=x onerror={MARK.format(i)}>",
                    "world_size": f"<script>{MARK.format('ws')}</script>",
                }
            },
        )
    return folder


# --- terminal and JSON ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_terminal_prints_the_payload_as_text(crafted, run_cli):
    r = run_cli("analyze", crafted, env={"COLUMNS": "3000"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert "\x1b" not in r.stdout + r.stderr and "\x07" not in r.stdout
    assert "\n# heading" not in r.stdout and "\\x0a# heading" in r.stdout
    for text in LITERAL:
        assert text in r.stdout, text
    assert "CPU-GPU sync points" in r.stdout


@pytest.mark.slow
def test_forced_colour_styles_but_makes_no_link_from_a_name(crafted, run_cli):
    r = run_cli("analyze", crafted, env={"COLUMNS": "3000", "FORCE_COLOR": "1", "TERM": "xterm-256color"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert "\x1b[" in r.stdout  # rich's own colours are on ...
    assert "\x1b]8;" not in r.stdout and "\x07" not in r.stdout  # ... but no hyperlink and no payload OSC
    assert "[link=https://evil.example]x[/link]" in r.stdout and "\\x1b[31m" in r.stdout


@pytest.mark.slow
def test_json_is_valid_and_keeps_the_payload_as_a_string(crafted, run_cli):
    r = run_cli("analyze", "--json", crafted)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "\x1b" not in r.stdout  # JSON escapes control characters
    d = json.loads(r.stdout)
    assert (
        d["device"]["name"] == ("NVIDIA H200\n# heading" + PAYLOAD)[:200]
    )  # names are cut at 200 characters
    assert d["trace"]["path"].endswith(f"{DIR_PAYLOAD}/{FILE_PAYLOAD}.17.pt.trace.json.gz")


@pytest.mark.slow  # starts an `idlehound analyze` process
def test_an_error_message_quoting_a_name_is_printed_inert(crafted, run_cli):
    r = run_cli("analyze", "--worker", "x\x1b[31m[/]", crafted)
    assert r.returncode == 2 and "\x1b" not in r.stderr and "\\x1b[31m[/]" in r.stderr


@pytest.mark.slow
def test_compare_prints_the_payload_as_text_in_the_terminal(crafted, run_cli):
    r = run_cli("compare", crafted, crafted, env={"COLUMNS": "3000"})  # rich tables, as `analyze` prints
    assert r.returncode == 0, r.stderr[-2000:]
    assert "\x1b" not in r.stdout + r.stderr and "\x07" not in r.stdout
    assert "\n# heading" not in r.stdout
    for text in LITERAL:
        assert text in r.stdout, text


def test_compare_markdown_is_inert(crafted):
    from idlehound.compare import compare_docs
    from idlehound.pipeline import analyze_path
    from idlehound.report import render_compare_markdown

    doc = analyze_path(crafted).doc
    md = render_compare_markdown(compare_docs(doc, doc))
    assert "\x1b" not in md and "<script" not in md and "\\[link=https://evil.example\\]" in md


# --- markdown -------------------------------------------------------------------------------------------------


class _Page(HTMLParser):
    """Tags, attributes, text and script bodies of an HTML page."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags, self.attrs, self.text, self.scripts, self._in = [], [], [], [], None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v) for k, v in attrs]
        if tag == "script":
            self.scripts.append([dict(attrs), ""])
            self._in = "script"

    def handle_endtag(self, tag):
        if tag == "script":
            self._in = None

    def handle_data(self, data):
        if self._in == "script":
            self.scripts[-1][1] += data
        else:
            self.text.append(data)

    @property
    def all_text(self):
        return "".join(self.text)


MD_TAGS = {
    "h1",
    "h2",
    "h3",
    "p",
    "strong",
    "em",
    "code",
    "pre",
    "ul",
    "li",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
}


def _check_markdown(md):
    assert "<script" not in md and "<img" not in md and "\x1b" not in md
    # rendered as a permissive renderer would (raw HTML allowed): no element or link comes from a name
    page = _Page(MarkdownIt("commonmark", {"html": True}).enable("table").render(md))
    assert set(page.tags) <= MD_TAGS, set(page.tags) - MD_TAGS
    assert {k for _, k, _ in page.attrs} <= {"style", "class"}
    # every table row has as many cells as its header
    for table in re.findall(r"^\|.*(?:\n\|.*)+", md, re.M):
        lines = table.split("\n")
        widths = {len(re.findall(r"(?<!\\)\|", line)) for line in lines}
        assert len(widths) == 1, lines
    return page


def test_markdown_shows_the_payload_as_text_only(doc):
    md = render_markdown(doc)
    page = _check_markdown(md)
    assert "<script>document.body" in page.all_text and "[x](javascript:alert(1))" in page.all_text
    assert PAYLOAD.replace("\x1b", "\\x1b").replace("\x07", "\\x07") in page.all_text


def test_compare_and_ladder_markdown_show_the_payload_as_text_only(doc):
    _check_markdown(render_compare_markdown(compare_docs(doc, doc)))
    _check_markdown(ladder_markdown(_ladder_doc()))


def test_markdown_escapes_each_payload_alone():
    assert md_text("<script>alert(1)</script>") == "&lt;script>alert(1)&lt;/script>"
    assert md_text("> quote, a -> b & c") == "\\> quote, a -> b &amp; c"
    assert md_text("[x](javascript:alert(1))") == "\\[x\\](javascript:alert(1))"
    assert md_text("a|b\nc") == "a\\|b\\\\x0ac"  # rendered: a|b\\x0ac
    assert md_code("train.py:12") == "`train.py:12`"
    assert md_code("a`b") == "a\\`b"
    assert md_fence("x = '```'", "python") == ["````python", "x = '```'", "````"]
    assert visible("\x1b]8;;http://e\x07\u202e") == "\\x1b]8;;http://e\\x07\\u202e"


# --- HTML -----------------------------------------------------------------------------------------------------

HTML_TAGS = {
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "h1",
    "h2",
    "div",
    "p",
    "b",
    "i",
    "span",
    "svg",
    "text",
    "rect",
    "table",
    "tr",
    "th",
    "td",
    "code",
    "pre",
    "ul",
    "li",
    "label",
    "input",
    "script",
    "polyline",
    "line",
    "br",
}
HTML_ATTRS = {
    "lang",
    "charset",
    "class",
    "id",
    "title",
    "style",
    "data-metric",
    "data-breakdown",
    "data-idle",
    "data-finding-ms",
    "width",
    "height",
    "role",
    "x",
    "y",
    "fill",
    "viewbox",
    "preserveaspectratio",
    "opacity",
    "type",
    "min",
    "max",
    "value",
    "points",
    "stroke",
    "stroke-width",
    "x1",
    "x2",
    "y1",
    "y2",
    "stroke-dasharray",
}
ZOOM_SCRIPT = (
    "(function(){var z=document.getElementById('timeline-zoom'),s=document.getElementById('timeline');"
    "z.addEventListener('input',function(){s.setAttribute('width',(100*z.value)+'%');});})();"
)


def _check_html(text):
    page = _Page(text)
    assert set(page.tags) <= HTML_TAGS, set(page.tags) - HTML_TAGS
    assert {k for _, k, _ in page.attrs} <= HTML_ATTRS, {k for _, k, _ in page.attrs} - HTML_ATTRS
    for attrs, body in page.scripts:  # only the page's own scripts: the zoom slider and the JSON data
        if attrs:
            assert attrs == {"type": "application/json", "id": "idlehound-data"}
            json.loads(body)
        else:
            assert body == ZOOM_SCRIPT
    return page


def test_html_report_shows_the_payload_as_text_only(doc):
    page = _check_html(render_html(doc))
    assert len(page.scripts) == 2
    shown = page.all_text
    assert (
        "<script>document.body" in shown
        and "'><img src=x onerror=" in shown
        and visible(FILE_PAYLOAD) in shown
    )
    assert "\x1b" not in shown and "\x07" not in shown  # shown as \x1b, as in the terminal and markdown
    assert (
        json.loads(page.scripts[0][1] if page.scripts[0][0] else page.scripts[1][1])["device"]["name"]
        == doc["device"]["name"]
    )


def test_compare_ladder_and_tune_pages_show_the_payload_as_text_only(doc):
    assert "<script>document.body" in _check_html(render_compare_html(compare_docs(doc, doc))).all_text
    assert visible(PAYLOAD) in _check_html(render_ladder_html(_ladder_doc())).all_text
    tune = json.loads((ROOT / "docs" / "measurements" / "tune-h200-a.json").read_text())
    tune.update(script=PAYLOAD, diff=PAYLOAD, snippets=[PAYLOAD])
    tune["variants"][0]["label"] = PAYLOAD
    assert visible(PAYLOAD) in _check_html(tune_html(tune)).all_text
    tune["diff"] = "+x = '```'\n+" + PAYLOAD  # a fence inside cannot close the block
    md = tune_markdown(tune)
    _check_markdown(md.split("````diff")[0])
    assert set(_Page(MarkdownIt("commonmark", {"html": True}).enable("table").render(md)).tags) <= MD_TAGS


def _ladder_doc():
    row = {
        "name": "baseline",
        "label": PAYLOAD,
        "status": "ok",
        "reason": PAYLOAD,
        "samples_per_s": 481.0,
        "ms_per_step": 66.5,
        "gpu_busy_pct": 17.2,
        "nvml_util": 8.0,
        "peak_mem_gib": 0.85,
        "speedup": 1.0,
        "pct_of_ceiling": 2.7,
        "top_finding": PAYLOAD,
        "config": {},
        "tried": [],
        "trace": PAYLOAD,
    }
    return {
        "schema": "idlehound/ladder",
        "schema_version": 1,
        "device": PAYLOAD,
        "rungs": [row, {**row, "name": "amp", "status": "failed", "samples_per_s": None}],
        "best": "baseline",
    }


# --- source snippets: only what capture stored, never a file read at render time -------------------------------


def _with_location(doc, **loc):
    d = copy.deepcopy(doc)
    f = d["findings"][0]
    f["location"] = {**{k: v for k, v in f["location"].items() if k != "snippet"}, **loc}
    return d


def test_a_location_naming_a_real_file_shows_none_of_it(doc):
    first = Path("/etc/passwd").read_text().splitlines()[0]
    page = render_html(_with_location(doc, file="/etc/passwd", line=1, exact=True))
    assert first and first not in html.unescape(page) and "class='snippet'" not in page


def test_a_stored_snippet_is_shown_escaped_with_its_line_marked(doc):
    lines = [f"line {i}" for i in range(10, 15)]
    lines[2] = f"x = 1  # {PAYLOAD.splitlines()[0]}"
    page = render_html(_with_location(doc, line=12, exact=True, snippet={"first_line": 10, "lines": lines}))
    snippet = re.search(r"<pre class='snippet'>(.*?)</pre>", page, re.S).group(1)
    assert html.unescape(snippet).splitlines() == [
        "     10  line 10",
        "     11  line 11",
        f">    12  {visible(lines[2])}",
        "     13  line 13",
        "     14  line 14",
    ]
    _check_html(page)


def test_a_snippet_that_misses_its_line_shows_nothing(doc):
    page = render_html(_with_location(doc, line=12, snippet={"first_line": 50, "lines": ["a"]}))
    assert "class='snippet'" not in page


@pytest.mark.parametrize(
    "bad",
    [
        {"first_line": "1", "lines": ["a"]},
        {"first_line": 1, "lines": "a"},
        {"first_line": 1, "lines": [1]},
        "a",
    ],
)
def test_a_malformed_snippet_is_refused_before_rendering(doc, bad):
    """A document is read as its typed Struct first: a snippet of the wrong shape never reaches a renderer."""
    with pytest.raises(msgspec.ValidationError, match="snippet"):
        render_html(_with_location(doc, line=12, snippet=bad))


# --- ranks ----------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_ranks_terminal_json_and_page_are_inert(ranks, tmp_path, run_cli):
    out = tmp_path / "ranks.html"
    r = run_cli("analyze", "--ranks", "-o", out, ranks, env={"COLUMNS": "3000"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert "\x1b" not in r.stdout and "[link=https://evil.example]x[/link]" in r.stdout
    assert "<img src=x onerror=document.body" in r.stdout  # the rank, as text
    page = _check_html(out.read_text())
    assert f"of world size <script>{MARK.format('ws')}</script>" in page.all_text
    j = run_cli("analyze", "--ranks", "--json", ranks)
    assert j.returncode == 0 and json.loads(j.stdout)["world_size"] == f"<script>{MARK.format('ws')}</script>"


def test_ranks_page_built_in_python_is_inert(ranks):
    _check_html(render_ranks_html(analyze_ranks(ranks, workers=1)))


# --- in a real browser ----------------------------------------------------------------------------------------


def _dom(tmp_path, page):
    from .test_browser import CHROMIUM, chromium

    if CHROMIUM is None:
        pytest.skip("chromium is not installed")
    r = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


@pytest.mark.slow
def test_the_browser_check_sees_a_payload_that_runs(tmp_path):
    page = tmp_path / "control.html"
    for raw in (f"<script>{MARK.format('script')}</script>", f'<img src=x onerror="{MARK.format("img")}">'):
        page.write_text(f"<!doctype html><html><body><p>{raw}</p></body></html>")  # the payload unescaped
        assert re.search(r"<body[^>]*data-pwned", _dom(tmp_path, page)), raw


@pytest.mark.slow
def test_report_and_ranks_pages_run_no_payload_in_chromium(doc, ranks, tmp_path):
    report = write(doc, tmp_path / "report.html")
    rank_page = tmp_path / "ranks.html"
    rank_page.write_text(render_ranks_html(analyze_ranks(ranks, workers=1)))
    for page in (report, rank_page):
        dom = _dom(tmp_path, page)
        assert re.search(r"<body[^>]*data-pwned", dom) is None  # no payload script or handler ran
        assert "<img" not in dom and "&lt;script&gt;document.body" in dom
