"""Make text from a trace inert before it reaches a terminal or a markdown file.

A trace is data written by someone else: names in it may hold escape sequences, rich markup, HTML or markdown.
Terminal renderers print names as rich `Text` (never markup) after `visible`; markdown renderers pass them
through `md_text` / `md_code`. HTML is escaped by the templates (report/html.py), after `html_value` (every
value a template writes) or `html_pre` (preformatted text) made control characters visible there too.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from markupsafe import Markup, escape

# C0 and C1 controls but tab, DEL, and the bidirectional overrides that can reorder what a reader sees.
_UNSEEN = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape_char(m: re.Match[str]) -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def visible(text: str) -> str:
    """Control characters as `\\xNN`, so an ESC from a trace is shown, never obeyed."""
    return _UNSEEN.sub(_escape_char, text)


_MULTILINE = frozenset({"code", "diff", "snippets", "lines"})  # text meant to span lines: newlines kept


def inert(value: Any, multiline: bool = False) -> Any:
    """`visible` applied to every string in a document (keys included); newlines kept only in code and diffs."""
    if isinstance(value, str):
        return visible_lines(value) if multiline else visible(value)
    if isinstance(value, msgspec.Struct):  # a document's Struct: the same Struct, its strings made visible
        fields = {k: inert(getattr(value, k), k in _MULTILINE) for k in value.__struct_fields__}
        return msgspec.structs.replace(value, **fields)
    if isinstance(value, dict):
        return {
            (visible(k) if isinstance(k, str) else k): inert(v, k in _MULTILINE) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [inert(v, multiline) for v in value]
    return value


# What makes markdown do something: raw HTML and autolinks (both open with <), entities (&), links and images
# ([ ]), code spans (`), table cells (|) and the escape character itself; > only at the start (a quote).
# Emphasis is left alone: it cannot hide or run anything, and escaping it would clutter every snake_case name.
_MD_SPECIAL = re.compile(r"[\\`\[\]|]|^>")
_HTML = {"&": "&amp;", "<": "&lt;"}


def md_text(value: Any) -> str:
    """A value as one line of plain markdown text: no HTML, link, code span or table break can come of it."""
    text = visible(str(value))
    text = re.sub("[&<]", lambda m: _HTML[m.group(0)], text)
    return _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), text)


_CODE_SAFE = re.compile(r"[^`<>&|\\\[\]\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]*")


def md_code(value: Any) -> str:
    """A value as an inline code span when it is plain; otherwise escaped text (a code span shows `&lt;` as is)."""
    text = str(value)
    return f"`{text}`" if _CODE_SAFE.fullmatch(text) else md_text(text)


def md_fence(text: str, lang: str = "") -> list[str]:
    """A fenced code block whose fence is longer than any backtick run inside, so the text cannot close it.

    What is inside a fence is shown literally by every renderer, so the text itself is left as it is.
    """
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + lang, text, fence]


def visible_lines(text: str) -> str:
    """`visible` line by line: newlines kept, every other control character shown."""
    return "\n".join(visible(line) for line in text.split("\n"))


def html_value(value: Any) -> Any:
    """What a template writes for a value (jinja2's finalize): strings with every control character shown, newlines
    too (a file name or kernel name is one line; in the page title and attributes a newline or U+202E would
    hide or reorder text). Markup (already escaped, such as html_pre's) and numbers are left as they are."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value)
    return value


def html_pre(value: Any) -> Markup:
    """Text for a preformatted block (code, diffs, snippets): escaped, its lines kept, every other control shown."""
    return Markup(escape(visible_lines(str(value))))
