import functools
import importlib.util
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "tests" / "traces"
SCRIPTS = ROOT / "tests" / "scripts"
# shared/ lies beside the checkout (developers and CI); IDLEHOUND_SHARED overrides.
SHARED = Path(os.environ.get("IDLEHOUND_SHARED", ROOT.parent / "shared")) / "fixtures" / "kineto_samples"


def shared(name: str) -> Path:
    p = SHARED / name
    if not p.exists():
        # one reason for the whole group, so the end-of-run summary names it once (pytest_terminal_summary)
        pytest.skip(f"the shared third-party traces are not present at {SHARED} (set IDLEHOUND_SHARED)")
    return p


def needs(*packages: str) -> pytest.MarkDecorator:
    """Skip where one of these packages is not installed, found without importing it: pytest.importorskip at a
    module's top imported torch (and Lightning) while the fast set was collected, seconds for tests it deselects."""
    missing = [name for name in packages if importlib.util.find_spec(name) is None]
    return pytest.mark.skipif(bool(missing), reason=f"not installed: {', '.join(missing)}")


@functools.cache
def analysed(path: Path):
    """analyze_path(path) of a recorded trace or run folder, once per session: the modules whose fixtures read the
    same recorded runs share one analysis (tests read it; one that changes it copies first)."""
    from idlehound.pipeline import analyze_path

    return analyze_path(path)


@pytest.fixture
def run_cli():
    """Run the idlehound CLI in a subprocess; returns CompletedProcess."""
    import subprocess

    def _run(*args, cwd=None, env=None, timeout=600):
        full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        return subprocess.run(
            [sys.executable, "-m", "idlehound", *map(str, args)],
            cwd=cwd,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return _run


@pytest.fixture
def forked_cli():
    """run_cli's answer, from a fork of an interpreter that has torch loaded (tests/_forkserver.py): for files
    whose `idlehound run`/`demo` would each import torch again. Such a file overrides run_cli with it. Not for
    tests of what a run records from the stack or prints of a traceback: the fork's stack holds the server's
    frames below the CLI (tests/test_reproducible.py, tests/test_first_hour.py keep run_cli)."""
    from ._forkserver import cli

    return cli


@pytest.fixture
def forked_children(monkeypatch):
    """tune's child runs started from this process (tune._runner: a variant's run, the changed script's check and
    its branch check) as forks of the tests' torch-loaded interpreter (tests/_forkserver.py, Subprocess)."""
    from idlehound.tune import _runner

    from ._forkserver import Subprocess

    monkeypatch.setattr(_runner, "subprocess", Subprocess)


@pytest.fixture(scope="session")
def pl_trainer_base(tmp_path_factory):
    """tune's child on the Lightning stand-in script as written (tests/scripts/tune/pl_trainer.py with fake_pl),
    run once for every test that reads its baseline: its losses, its facts."""
    from .tune_helpers import TUNE, run_child

    out = tmp_path_factory.mktemp("pl_trainer_base") / "r.json"
    return run_child(out, TUNE / "pl_trainer.py", {}, fake="fake_pl")


def pytest_xdist_auto_num_workers(config):
    """Workers for `-n auto` (pyproject's addopts): two for the whole fast set, whose tests are in-process work
    that shares nothing but read-only fixtures (each file stays on one worker, --dist loadfile); none (this
    process, in order) when slow tests are selected, whose captures, tunes and fault trials time themselves and
    must not share the cores with another worker, or when files or -k are given, or on one core.
    PYTEST_XDIST_AUTO_NUM_WORKERS, when set, is xdist's to read."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    whole_fast_set = (
        config.option.markexpr == "not slow"
        and not config.option.keyword
        and config.args == config.getini("testpaths")
    )
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 2 if whole_fast_set and cores > 1 else 0


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Each reason tests were skipped for, once, with how many it skipped (the groups, not every test)."""
    reasons: dict[str, int] = {}
    for rep in terminalreporter.stats.get("skipped", []):
        if isinstance(rep.longrepr, tuple):  # (file, line, "Skipped: reason")
            reason = str(rep.longrepr[2]).removeprefix("Skipped: ")
        else:
            reason = str(rep.longrepr)
        reasons[reason] = reasons.get(reason, 0) + 1
    if reasons:
        terminalreporter.section("skipped, by reason")
        for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
            terminalreporter.write_line(f"{n:4d} skipped: {reason}")
