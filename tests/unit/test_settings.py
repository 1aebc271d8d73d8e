"""The IDLEHOUND_* environment variables: each read and checked in idlehound.settings, each documented in
docs/environment.md, and a bad value is one line naming the variable with exit code 2."""

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from idlehound import SettingError, settings
from idlehound.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "environment.md"

BAD = {
    "IDLEHOUND_DEBUG": "maybe",
    "IDLEHOUND_JOBS": "all",
    "IDLEHOUND_NATIVE": "2",
    "IDLEHOUND_MAX_TRACE_BYTES": "lots",
    "IDLEHOUND_MAX_GZIP_RATIO": "-3",
    "IDLEHOUND_TUNE_LAUNCHED": "yesterday",
}


def test_the_page_documents_every_variable_the_module_reads_and_no_other():
    documented = set(re.findall(r"^\| `(IDLEHOUND_\w+)`", DOC.read_text(encoding="utf-8"), re.M))
    assert documented == {s.name for s in settings.ALL}
    assert len(settings.ALL) == 9


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_value_raises_an_error_that_names_the_variable(monkeypatch, name):
    monkeypatch.setenv(name, BAD[name])
    with pytest.raises(SettingError) as e:
        settings.check_all()
    assert str(e.value).startswith(f"{name}: must be ") and repr(BAD[name]) in str(e.value)


@pytest.mark.parametrize("name", sorted(BAD))
def test_the_cli_says_one_line_and_exits_2_before_the_command_runs(monkeypatch, tmp_path, name):
    monkeypatch.setenv(name, BAD[name])
    r = CliRunner().invoke(main, ["analyze", str(tmp_path / "nothing.json")])
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"idlehound: {name}: must be "), r.output


def test_values_are_parsed_and_unset_or_empty_gives_the_default(monkeypatch):
    for s in settings.ALL:
        monkeypatch.delenv(s.name, raising=False)
    assert [s.get() for s in settings.ALL] == [s.default for s in settings.ALL]
    monkeypatch.setenv("IDLEHOUND_JOBS", " ")
    assert settings.JOBS.get() is None
    monkeypatch.setenv("IDLEHOUND_JOBS", "3")
    monkeypatch.setenv("IDLEHOUND_MAX_TRACE_BYTES", "2e9")
    monkeypatch.setenv("IDLEHOUND_MAX_GZIP_RATIO", "50.5")
    monkeypatch.setenv("IDLEHOUND_NATIVE", "off")
    monkeypatch.setenv("IDLEHOUND_DEBUG", "1")
    monkeypatch.setenv("IDLEHOUND_CACHE", str(ROOT))
    assert (settings.JOBS.get(), settings.MAX_TRACE_BYTES.get(), settings.MAX_GZIP_RATIO.get()) == (
        3,
        2e9,
        50.5,
    )
    assert (settings.NATIVE.get(), settings.DEBUG.get(), settings.cache_dir()) == (False, True, ROOT)


@pytest.mark.parametrize("text", ["0", "-1", "1.5", "inf", "nan", "1e400"])
def test_jobs_and_sizes_refuse_what_is_not_a_positive_count(monkeypatch, text):
    monkeypatch.setenv("IDLEHOUND_JOBS", text)
    with pytest.raises(SettingError, match="IDLEHOUND_JOBS: must be a whole number of 1 or more"):
        settings.JOBS.get()
    if text != "1.5":  # 1.5 bytes is one byte
        monkeypatch.setenv("IDLEHOUND_MAX_TRACE_BYTES", text)
        with pytest.raises(
            SettingError, match="IDLEHOUND_MAX_TRACE_BYTES: must be a positive number of bytes"
        ):
            settings.MAX_TRACE_BYTES.get()


def test_no_module_but_settings_names_an_idlehound_variable():
    """A new variable goes through idlehound.settings (and so into docs/environment.md): every other module
    reads one only as settings.NAME.get() and sets one under settings.NAME.name."""
    import ast

    src = ROOT / "src" / "idlehound"
    found = [
        f"{p.relative_to(src)}:{n.lineno}: {n.value}"
        for p in sorted(src.rglob("*.py"))
        if p.name != "settings.py"
        for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and re.fullmatch(r"IDLEHOUND_[A-Z_]+", n.value)
    ]
    assert [f for f in found if not f.endswith(": IDLEHOUND_SYNTHETIC")] == []  # that one names a marker file
