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


# Files whose tests time themselves (tune's speed-ups, budgets and child timeouts, watch's slowdown trigger, the
# fault matrix's and capture's signals at a moment, torchrun and Ray jobs, a Ctrl-C during start-up): under xdist
# they are one unit of work, started first on one worker and run there in order, so no two of them ever share the
# cores; the other worker runs the other files, in-process work for the most part (pytest_xdist_make_scheduler).
TIMED = "timed"
TIMED_FILES = frozenset(
    {
        "test_tune.py",
        "test_tune_budget.py",
        "test_tune_predict.py",
        "test_tune_robust.py",
        "test_watch.py",
        "test_fault_matrix.py",
        "test_capture.py",
        "test_capture_faults.py",
        "test_distributed.py",
        "test_distributed_ray.py",
        "test_startup_interrupt.py",
    }
)


def pytest_xdist_auto_num_workers(config):
    """Workers for `-n auto` (pyproject's addopts): two for a whole set (the fast one, the slow one, both: CI's
    run), none (this process, in order) when files or -k are given, or on one core. Each file stays on one worker
    (its module fixtures are made once); the files that time themselves all on one (TIMED_FILES).
    PYTEST_XDIST_AUTO_NUM_WORKERS, when set, is xdist's to read."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    whole_set = not config.option.keyword and config.args == config.getini("testpaths")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 2 if whole_set and cores > 1 else 0


def pytest_xdist_make_scheduler(config, log):
    """--dist loadfile (pyproject's addopts), with TIMED_FILES one unit of work, handed out first (the longest:
    the other files fill the other worker meanwhile). The unit is read from the node id's file (xdist's own
    --dist loadgroup does not group on pytest 9.2: pytest-xdist issue 1386)."""
    if config.getoption("dist", "no") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class TimedFirst(LoadFileScheduling):
        def _split_scope(self, nodeid):
            file = nodeid.split("::", 1)[0]
            return TIMED if file.rsplit("/", 1)[-1] in TIMED_FILES else file

        def _assign_work_unit(self, node):
            if TIMED in self.workqueue:
                self.workqueue.move_to_end(TIMED, last=False)
            super()._assign_work_unit(node)

    return TimedFirst(config, log)


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
