"""The lint document (schema idlehound/lint) as text, GitHub workflow annotations, SARIF 2.1.0 or JSON.

GitHub reads `::warning file=...,line=...::message` lines from a step's output and shows them on the diff; code
scanning reads SARIF (OASIS SARIF 2.1.0: a log of runs, each with its tool's rules and its results).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple
from urllib.parse import quote

from .._version import __version__
from . import model as m
from .model import encode

LINT_FORMATS = ("text", "github", "sarif", "json")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"


class LintRuleText(NamedTuple):
    """A lint rule as SARIF describes every rule of the run (lint/ owns the rules; report/ cannot import it)."""

    id: str
    name: str
    why: str
    fix: str


def render_lint(doc: m.Lint, fmt: str, rules: Sequence[LintRuleText] = ()) -> str:
    """The findings in one of LINT_FORMATS (text is the terminal's; its summary line is the caller's). SARIF lists
    `rules`, every rule of the run, found or not."""
    if fmt == "text":
        return lint_text(doc)
    if fmt == "github":
        return lint_github(doc)
    if fmt == "sarif":
        return encode(sarif_log(doc, rules))
    if fmt == "json":
        return encode(doc)
    raise ValueError(f"unknown lint format {fmt!r} (one of {', '.join(LINT_FORMATS)})")


def _measured(f: m.LintRow) -> str:
    cost = f.measured_idle_ms_per_step
    return f" [measured: {cost:.3f} ms GPU idle per step]" if cost is not None else ""


def lint_text(doc: m.Lint) -> str:
    out = []
    for f in doc.findings:
        out.append(f"{f.file}:{f.line}:{f.col + 1}: {f.rule} {f.name}: {f.why}{_measured(f)}")
        out.append(f"    {f.code}\n    fix: {f.fix}")
    return "\n".join(out)


def _escape_data(s: str) -> str:
    """A workflow command's message: %, CR and LF are escaped (GitHub's toolkit `escapeData`)."""
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    """A workflow command's property value: also ':' and ',' (`escapeProperty`)."""
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, message: str, title: str = "", file: str = "", line: int = 0, col: int = 0) -> str:
    """One GitHub workflow command: `::error file=F,line=L,col=C,title=T::message` (level error/warning/notice)."""
    props = [
        f"{k}={_escape_property(str(v))}"
        for k, v in (("file", file), ("line", line), ("col", col), ("title", title))
        if v
    ]
    return f"::{level}{' ' + ','.join(props) if props else ''}::{_escape_data(message)}"


def lint_github(doc: m.Lint) -> str:
    return "\n".join(
        annotation(
            "warning",
            f"{f.why}{_measured(f)}. Fix: {f.fix}",
            title=f"idlehound {f.rule} {f.name}",
            file=_posix(f.file),
            line=f.line,
            col=f.col + 1,
        )
        for f in doc.findings
    )


def _posix(name: str) -> str:
    return name.replace(os.sep, "/") if os.sep != "/" else name


def _uri(name: str) -> str:
    """A result's artifact URI: relative names as relative URI references (code scanning resolves them against
    the checkout), absolute ones as file:// URIs."""
    p = Path(name)
    if p.is_absolute():
        return p.as_uri()
    return quote(str(PurePosixPath(*p.parts)), safe="/")


def sarif_log(doc: m.Lint, rules: Sequence[LintRuleText]) -> dict[str, Any]:
    """The SARIF 2.1.0 log: one run of idlehound's lint, every rule described, one result per finding."""
    ids = [r.id for r in rules]
    described = [
        {
            "id": r.id,
            "name": r.name,
            "shortDescription": {"text": r.why},
            "fullDescription": {"text": f"{r.why}. Fix: {r.fix}"},
            "help": {"text": r.fix},
            "defaultConfiguration": {"level": "warning"},
        }
        for r in rules
    ]
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {"driver": {"name": "idlehound", "version": __version__, "rules": described}},
                "columnKind": "unicodeCodePoints",
                "results": [_result(f, ids.index(f.rule)) for f in doc.findings],
            }
        ],
    }


def _result(f: m.LintRow, index: int) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": f.rule,
        "ruleIndex": index,
        "level": "warning",
        "message": {"text": f"{f.why}{_measured(f)}. Fix: {f.fix}"},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(f.file)},
                    "region": {"startLine": f.line, "startColumn": f.col + 1, "snippet": {"text": f.code}},
                }
            }
        ],
    }
    if f.measured_idle_ms_per_step is not None:
        result["properties"] = {"measured_idle_ms_per_step": f.measured_idle_ms_per_step}
    return result
