"""What the tune tests share: one run of tune's child on a script, and the options of a quick `idlehound tune`."""

import json
import os
from pathlib import Path
from typing import Any

from idlehound.tune._changes import COMPILE_BACKEND_ENV

from . import _forkserver as forkserver
from .conftest import ROOT, SCRIPTS

TUNE = SCRIPTS / "tune"
QUICK = ("--skip", "2", "--steps", "4", "--min-rounds", "2", "--max-rounds", "2")  # a quick tune's options


def run_child(
    out: Path, script: Path, settings: dict, *args: str, fake: str = "", steps: int = 3, timeout: int = 300
) -> dict[str, Any]:
    """One run of tune's child on script with a variant's settings (2 warm-up steps, then `steps`); its result.
    It runs as a fork of an interpreter that has torch loaded (tests/_forkserver.py): the same module, argv and
    environment as `python -m idlehound.tune._child`, without importing torch again.
    fake: a stand-in package folder of tests/scripts/tune (fake_hf, fake_pl) put first on the path."""
    path = os.environ.get("PYTHONPATH", "")
    if fake:
        path = os.pathsep.join([str(TUNE / fake), path])
    env = {**os.environ, "PYTHONPATH": path, COMPILE_BACKEND_ENV: "eager"}  # no C++ compiler run in tests
    argv = [str(out), json.dumps(settings), "2", str(steps), str(script), *args]
    forkserver.run(argv, module="idlehound.tune._child", env=env, timeout=timeout, check=True)
    return json.loads(Path(out).read_text())


# `idlehound tune` in a fork whose children are forks too: its _runner's subprocess is forkserver.Subprocess,
# which runs each `python -m idlehound.tune._child` (and the diagnosis's `idlehound run`, the branch check) as a
# fork of a torch-loaded server of the tune's own: one torch import for the whole tune, not one per child run
_TUNE_IN_FORK = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from tests import _forkserver
del sys.path[0]
from idlehound.tune import _runner
_runner.subprocess = _forkserver.Subprocess
from idlehound.cli import main
try:
    main(prog_name="idlehound")
finally:
    if _forkserver._server is not None:  # its own server ends with it (and its CPU time is counted)
        _forkserver._server.close()
"""


def tune_cli(*args: object, env: dict | None = None, timeout: float = 900):
    """`idlehound tune *args` as conftest's run_cli runs it (PYTHONUNBUFFERED, env added, stdin /dev/null), with
    its child runs forked (above); the CompletedProcess."""
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    return forkserver.run(["tune", *map(str, args)], code=_TUNE_IN_FORK, env=full_env, timeout=timeout)
