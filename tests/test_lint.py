import json

import pytest

from idlehound.lint import lint_paths

from .conftest import SCRIPTS, TRACES

LINT = SCRIPTS / "lint"


def test_every_trap_found_at_its_line():
    found = {(f.rule, f.line) for f in lint_paths([LINT / "traps.py"])}
    expected = {
        ("IH010", 9),
        ("IH011", 9),
        ("IH014", 8),
        ("IH015", 7),
        ("IH013", 13),
        ("IH005", 16),
        ("IH005", 17),
        ("IH001", 18),
        ("IH002", 19),
        ("IH002", 20),
        ("IH004", 21),
        ("IH006", 22),
        ("IH007", 23),
        ("IH008", 25),
        ("IH009", 26),
    }
    assert found == expected


def test_ignore_comment_and_code_after_the_loop_are_quiet():
    lines = {f.line for f in lint_paths([LINT / "traps.py"])}
    assert 27 not in lines  # `# idlehound: ignore[IH001]`
    assert 28 not in lines and 29 not in lines  # .item() and print after training


def test_clean_loop_and_healthy_scripts_have_no_findings():
    assert lint_paths([LINT / "clean.py"]) == []
    assert lint_paths([SCRIPTS / "planted" / "healthy.py"]) == []


@pytest.mark.slow
def test_planted_sync_script(run_cli):
    r = run_cli("lint", "--json", "--trace", TRACES / "sync_item", SCRIPTS / "planted" / "sync_item.py")
    assert r.returncode == 1
    rows = {(f["rule"], f["line"]): f for f in json.loads(r.stdout)["findings"]}
    assert set(rows) == {("IH001", 16), ("IH005", 17)}
    # joined to the recorded trace of that very script: its measured cost per step
    assert rows[("IH005", 17)]["measured_idle_ms_per_step"] > 1.0
    assert rows[("IH001", 16)]["measured_idle_ms_per_step"] > 0.1


@pytest.mark.slow
def test_exit_codes_and_errors(run_cli, tmp_path):
    assert run_cli("lint", LINT / "clean.py").returncode == 0
    bad = tmp_path / "bad.py"
    bad.write_text("for x in y:\n  print(\n")
    r = run_cli("lint", bad)
    assert r.returncode == 2 and "not valid Python" in r.stderr and r.stderr.count("\n") == 1
