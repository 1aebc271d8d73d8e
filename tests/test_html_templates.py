"""Every HTML page comes from a Jinja template with autoescaping on: no Python module that renders a page builds
markup from strings (issue 20: f-strings escaped by hand let trace text reach a page unescaped)."""

import ast
import re

from idlehound.report.html import _env

from .conftest import ROOT

SRC = ROOT / "src" / "idlehound"
RENDERERS = [
    *sorted((SRC / "report").glob("*.py")),
    *sorted((SRC / "distributed").glob("*.py")),
    SRC / "ladder.py",
    SRC / "compare.py",
]
_TAG = re.compile(
    r"</?(html|head|body|div|span|p|a|svg|rect|line|polyline|text|g|table|tr|td|th|ul|ol|li|"
    r"h[1-6]|pre|code|script|style|details|summary|img|br|b|i|em|strong)\b[^<>]*>",
    re.IGNORECASE,
)


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    out = []
    parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) not in parts and isinstance(node.value, str):
            out.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr):  # an f-string: its literal parts joined, values as {}
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            out.append((node.lineno, text))
    return out


def test_no_renderer_builds_html_from_strings():
    found = []
    for path in RENDERERS:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, text in _strings(tree):
            if _TAG.search(text):
                found.append(f"{path.relative_to(ROOT)}:{line}: {text[:60]!r}")
    assert not found, "HTML built outside report/templates:\n" + "\n".join(found)


def test_the_checker_sees_markup_in_an_fstring():
    tree = ast.parse('x = f"<td>{name}</td>"\ny = "<svg width=1>"\nz = "a < b and c > d"')
    assert [t for _, t in _strings(tree) if _TAG.search(t)] == ["<td>{}</td>", "<svg width=1>"]


def test_every_template_autoescapes():
    env = _env()
    names = [n for n in env.list_templates() if n.endswith(".html")]
    assert {"report.html", "compare.html", "ranks.html", "ladder.html", "tune.html"} <= set(names)
    assert all(env.autoescape is True or env.autoescape(n) for n in names)
    text = env.from_string("{{ v }}").render(v="<script>x</script>")
    assert text == "&lt;script&gt;x&lt;/script&gt;"
