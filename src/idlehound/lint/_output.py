"""`idlehound lint --format`: the findings as text, GitHub workflow annotations, SARIF 2.1.0 or JSON.

GitHub reads `::warning file=...,line=...::message` lines from a step's output and shows them on the diff; code
scanning reads SARIF (OASIS SARIF 2.1.0: a log of runs, each with its tool's rules and its results).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from .._version import __version__
from ..report import encode, model
from ._catalog import RULES, LintFinding

FORMATS = ("text", "github", "sarif", "json")
Costs = dict[tuple[str, int], float]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"


def _measured(f: LintFinding, costs: Costs) -> str:
    cost = costs.get((f.file, f.line))
    return f" [measured: {cost:.3f} ms GPU idle per step]" if cost is not None else ""


def text(found: list[LintFinding], costs: Costs) -> str:
    out = []
    for f in found:
        out.append(
            f"{f.file}:{f.line}:{f.col + 1}: {f.rule} {f.info.name}: {f.info.why}{_measured(f, costs)}"
        )
        out.append(f"    {f.text}\n    fix: {f.info.fix}")
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


def github(found: list[LintFinding], costs: Costs) -> str:
    return "\n".join(
        annotation(
            "warning",
            f"{f.info.why}{_measured(f, costs)}. Fix: {f.info.fix}",
            title=f"idlehound {f.rule} {f.info.name}",
            file=_posix(f.file),
            line=f.line,
            col=f.col + 1,
        )
        for f in found
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


def sarif_log(found: list[LintFinding], costs: Costs) -> dict[str, Any]:
    """The SARIF 2.1.0 log: one run of idlehound's lint, every rule described, one result per finding."""
    ids = list(RULES)
    rules = [
        {
            "id": r.id,
            "name": r.name,
            "shortDescription": {"text": r.why},
            "fullDescription": {"text": f"{r.why}. Fix: {r.fix}"},
            "help": {"text": r.fix},
            "defaultConfiguration": {"level": "warning"},
        }
        for r in RULES.values()
    ]
    results = []
    for f in found:
        props: dict[str, Any] = {}
        cost = costs.get((f.file, f.line))
        if cost is not None:
            props["measured_idle_ms_per_step"] = cost
        result: dict[str, Any] = {
            "ruleId": f.rule,
            "ruleIndex": ids.index(f.rule),
            "level": "warning",
            "message": {"text": f"{f.info.why}{_measured(f, costs)}. Fix: {f.info.fix}"},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(f.file)},
                        "region": {
                            "startLine": f.line,
                            "startColumn": f.col + 1,
                            "snippet": {"text": f.text},
                        },
                    }
                }
            ],
        }
        if props:
            result["properties"] = props
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "idlehound",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def json_doc(found: list[LintFinding], costs: Costs) -> str:
    rows = [
        model.LintRow(**f.to_json(), measured_idle_ms_per_step=costs.get((f.file, f.line))) for f in found
    ]
    return encode(model.Lint(schema="idlehound/lint", schema_version=1, findings=rows))


def render(found: list[LintFinding], costs: Costs, fmt: str) -> str:
    """The findings in one of FORMATS (text is the terminal's; its summary line is the caller's)."""
    if fmt == "text":
        return text(found, costs)
    if fmt == "github":
        return github(found, costs)
    if fmt == "sarif":
        return encode(sarif_log(found, costs))
    if fmt == "json":
        return json_doc(found, costs)
    raise ValueError(f"unknown lint format {fmt!r} (one of {', '.join(FORMATS)})")


def summary(found: list[LintFinding]) -> str:
    return f"{len(found)} finding(s) in {len({f.file for f in found})} file(s)" if found else "no findings"
