"""`idlehound lint --format text|github|sarif|json`, and the GitHub annotation of a failed `analyze --fail-under`.

The SARIF log is checked against a JSON schema written here from the OASIS SARIF 2.1.0 specification's required
properties, enums and minimums (the official schema's licence, the OASIS IPR policy, does not let us ship a copy);
set IDLEHOUND_SARIF_SCHEMA to a local copy of the official schema to check against it as well."""

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from idlehound.cli import main
from idlehound.lint import annotation, lint_paths, summary
from idlehound.lint._output import HELD_OUT

from .conftest import SCRIPTS, TRACES

TRAPS = SCRIPTS / "lint" / "traps.py"

_LEVEL = {"enum": ["none", "note", "warning", "error"]}
_TEXT = {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}


def _obj(props: dict, required: tuple = (), **more) -> dict:
    """An object as the SARIF schema defines them: listed properties only (additionalProperties: false)."""
    return {
        "type": "object",
        "properties": {**props, "properties": {"type": "object"}},
        "required": list(required),
        "additionalProperties": False,
        **more,
    }


SARIF_SUBSET = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    **_obj(
        {
            "$schema": {"type": "string", "format": "uri"},
            "version": {"enum": ["2.1.0"]},
            "runs": {
                "type": "array",
                "items": _obj(
                    {
                        "tool": _obj(
                            {
                                "driver": _obj(
                                    {
                                        "name": {"type": "string"},
                                        "version": {"type": "string"},
                                        "rules": {
                                            "type": "array",
                                            "uniqueItems": True,
                                            "items": _obj(
                                                {
                                                    "id": {"type": "string"},
                                                    "name": {"type": "string"},
                                                    "shortDescription": _TEXT,
                                                    "fullDescription": _TEXT,
                                                    "help": _TEXT,
                                                    "defaultConfiguration": _obj({"level": _LEVEL}),
                                                },
                                                ("id",),
                                            ),
                                        },
                                    },
                                    ("name",),
                                )
                            },
                            ("driver",),
                        ),
                        "columnKind": {"enum": ["utf16CodeUnits", "unicodeCodePoints"]},
                        "results": {
                            "type": "array",
                            "items": _obj(
                                {
                                    "ruleId": {"type": "string"},
                                    "ruleIndex": {"type": "integer", "minimum": -1},
                                    "level": _LEVEL,
                                    "message": _obj(
                                        {"text": {"type": "string"}, "id": {"type": "string"}},
                                        anyOf=[{"required": ["text"]}, {"required": ["id"]}],
                                    ),
                                    "locations": {
                                        "type": "array",
                                        "items": _obj(
                                            {
                                                "physicalLocation": _obj(
                                                    {
                                                        "artifactLocation": _obj(
                                                            {
                                                                "uri": {
                                                                    "type": "string",
                                                                    "format": "uri-reference",
                                                                }
                                                            }
                                                        ),
                                                        "region": _obj(
                                                            {
                                                                "startLine": {
                                                                    "type": "integer",
                                                                    "minimum": 1,
                                                                },
                                                                "startColumn": {
                                                                    "type": "integer",
                                                                    "minimum": 1,
                                                                },
                                                                "snippet": _obj({"text": {"type": "string"}}),
                                                            },
                                                            anyOf=[{"required": ["startLine"]}],
                                                        ),
                                                    },
                                                    anyOf=[{"required": ["artifactLocation"]}],
                                                )
                                            }
                                        ),
                                    },
                                },
                                ("message",),
                            ),
                        },
                    },
                    ("tool",),
                ),
            },
        },
        ("version", "runs"),
    ),
}


def _lint(*args: str, env=None):
    return CliRunner().invoke(main, ["lint", *args], env=env)


def _sarif(*paths: Path) -> dict:
    out = _lint("--format", "sarif", *map(str, paths))
    assert out.exit_code == 1, out.output  # findings: exit 1 in every format
    return json.loads(out.stdout)


def test_sarif_validates_and_carries_every_finding_at_its_line():
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the dev extra")
    log = _sarif(TRAPS)
    jsonschema.validate(log, SARIF_SUBSET, format_checker=jsonschema.FormatChecker())
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    got = set()
    for res in run["results"]:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        region = res["locations"][0]["physicalLocation"]["region"]
        assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("lint/traps.py")
        got.add((res["ruleId"], region["startLine"]))
    assert got == {(f.rule, f.line) for f in lint_paths([TRAPS])}
    assert ("IH001", 18) in got  # the .item() in the loop (tests/test_lint.py lists them all)


def test_the_schema_here_rejects_what_sarif_forbids():
    """The checker is not a rubber stamp: each break of a required field or an enum is caught."""
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the dev extra")
    good = _sarif(TRAPS)

    def broken(edit):
        log = json.loads(json.dumps(good))
        edit(log)
        return list(jsonschema.Draft7Validator(SARIF_SUBSET).iter_errors(log))

    assert broken(lambda g: None) == []
    assert broken(lambda g: g.update(version="2.0.0"))
    assert broken(lambda g: g["runs"][0]["tool"]["driver"].pop("name"))
    assert broken(lambda g: g["runs"][0]["results"][0].pop("message"))
    assert broken(lambda g: g["runs"][0]["results"][0].update(level="fatal"))
    assert broken(
        lambda g: g["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"].update(startLine=0)
    )
    assert broken(lambda g: g["runs"][0]["results"][0].update(extra=1))  # additionalProperties: false


def test_sarif_against_the_official_schema_when_a_copy_is_given():
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the dev extra")
    path = os.environ.get("IDLEHOUND_SARIF_SCHEMA")
    if not path:
        pytest.skip("IDLEHOUND_SARIF_SCHEMA not set (the OASIS schema is not shipped: its licence)")
    schema = json.loads(Path(path).read_text())
    jsonschema.validate(_sarif(TRAPS), schema, format_checker=jsonschema.FormatChecker())


def test_github_format_is_one_warning_annotation_per_finding():
    out = _lint("--format", "github", str(TRAPS))
    assert out.exit_code == 1
    lines = out.stdout.splitlines()
    found = lint_paths([TRAPS])
    assert len(lines) == len(found)
    pat = re.compile(r"^::warning file=([^,]+),line=(\d+),col=(\d+),title=idlehound (IH\d{3}) [a-z-]+::.+$")
    got = set()
    for line in lines:
        m = pat.match(line)
        assert m, line
        assert m.group(1).endswith("lint/traps.py")
        got.add((m.group(4), int(m.group(2))))
    assert got == {(f.rule, f.line) for f in found}
    assert "finding(s)" not in out.stdout  # the summary line is text's, on stderr


def test_annotation_escapes_what_the_workflow_command_syntax_reserves():
    line = annotation("error", "50% done\nnext", title="a: b, c", file="dir,x/t.py", line=3)
    assert line == "::error file=dir%2Cx/t.py,line=3,title=a%3A b%2C c::50%25 done%0Anext"


def test_text_is_the_default_and_json_is_the_json_flag():
    plain, text = _lint(str(TRAPS)), _lint("--format", "text", str(TRAPS))
    assert plain.exit_code == text.exit_code == 1
    assert plain.stdout == text.stdout and "traps.py:18:" in text.stdout
    count, trust, trace = text.stderr.strip().splitlines()
    assert count == f"{len(lint_paths([TRAPS]))} finding(s) in 1 file(s)"
    assert trust == f"these are places to look, not measured costs: {HELD_OUT}"
    assert trace.startswith("`--trace RUN` joins each to the GPU idle measured at its line")
    as_json, flag = _lint("--format", "json", str(TRAPS)), _lint("--json", str(TRAPS))
    assert as_json.stdout == flag.stdout
    assert json.loads(as_json.stdout)["schema"] == "idlehound/lint"


def test_a_clean_file_exits_0_with_an_empty_sarif_run():
    out = _lint("--format", "sarif", str(SCRIPTS / "lint" / "clean.py"))
    assert out.exit_code == 0 and json.loads(out.stdout)["runs"][0]["results"] == []
    assert _lint("--format", "github", str(SCRIPTS / "lint" / "clean.py")).stdout.strip() == ""


def test_an_unknown_format_is_a_usage_error():
    out = _lint("--format", "xml", str(TRAPS))
    assert out.exit_code == 2 and "xml" in out.stderr


def _gate(env):
    return CliRunner().invoke(
        main, ["analyze", str(TRACES / "sync_item"), "--fail-under", "gpu_util=99"], env=env
    )


def test_fail_under_on_github_actions_prints_an_error_annotation_at_the_top_finding():
    out = _gate({"GITHUB_ACTIONS": "true"})
    assert out.exit_code == 1
    (line,) = [x for x in out.stdout.splitlines() if x.startswith("::")]
    assert re.match(
        r"^::error file=[^,]*sync_item\.py,line=17,title=idlehound --fail-under::gpu_util = [\d.]+ is under 99\. "
        r"GPU idle ",
        line,
    ), line
    assert "gate failed" in out.stderr


def test_fail_under_elsewhere_prints_no_annotation():
    out = _gate({"GITHUB_ACTIONS": ""})
    assert out.exit_code == 1 and "::error" not in out.stdout + out.stderr


def test_the_trust_line_says_what_the_docs_measured():
    """The figure lint prints without a trace is the held-out one docs/lint.md states at its top."""
    top = " ".join(
        (Path(__file__).resolve().parents[1] / "docs" / "lint.md").read_text().split("## Rules")[0].split()
    )
    assert "about 7 findings in 10 are right (6 to 8 in 10 from one batch of repositories to the next)" in top
    assert "about 7 findings in 10 were right (6 to 8 from one batch of repositories to the next)" in HELD_OUT
    assert "finds about 2 of 3 such lines" in top and HELD_OUT.endswith("it found 2 of 3 such lines")


def test_no_trust_line_when_nothing_is_found():
    assert summary([]) == "no findings"


def test_with_a_trace_the_summary_is_the_count_alone():
    """Joined to a recorded run, each finding carries its measured idle: no trust caveat is printed."""
    out = _lint("--trace", str(TRACES / "sync_item"), str(SCRIPTS / "planted" / "sync_item.py"))
    assert out.exit_code == 1 and "ms" in out.stdout
    assert out.stderr.strip() == "2 finding(s) in 1 file(s)"
