"""Ctrl-C at random moments of CLI start-up (imports, argument parsing, the start of the analysis): exit 130 and
one line, never a traceback from idlehound's code.

Python's own start-up (site, locating the package) comes before any idlehound code can act: a SIGINT there
is Python's, so delays are drawn after a bare interpreter's start-up time, and a traceback that names no file
of idlehound is told apart from one that does (the failure this test is about).
"""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
TRACE = ROOT / "tests" / "traces" / "demo"
TRIALS = 20
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}


def _seconds(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=_env(), capture_output=True, timeout=120)
    return time.perf_counter() - t0


def _commands() -> list[list[str]]:
    cmds = [[sys.executable, "-m", "idlehound", "analyze", str(TRACE)]]
    script = Path(sys.executable).parent / "idlehound"
    if script.exists():  # the console script: it imports idlehound.cli before main() can catch anything
        cmds.append([str(script), "analyze", str(TRACE)])
    return cmds


def _interrupt(cmd: list[str], delay: float) -> tuple[int, str, str]:
    p = subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    return p.returncode, out, err


def _idlehound_frames(err: str) -> list[str]:
    return [
        line
        for line in err.splitlines()
        if line.strip().startswith("File ")
        and (str(SRC / "idlehound") in line or "site-packages/idlehound/" in line)
    ]


@pytest.mark.slow  # seconds of subprocesses: CI runs it (-m "slow or not slow")
def test_ctrl_c_during_start_up_exits_130_quietly():
    python_start = _seconds([sys.executable, "-c", "pass"])
    cli_start = _seconds([sys.executable, "-m", "idlehound", "--version"])
    done = subprocess.run(_commands()[0], env=_env(), capture_output=True, text=True, timeout=120)
    complete_output = done.stdout if done.returncode == 0 else None
    rng = random.Random(14)
    cmds = _commands()
    outcomes = []
    for i in range(TRIALS):
        delay = rng.uniform(2 * python_start, max(cli_start * 1.2, 3 * python_start))
        code, out, err = _interrupt(cmds[i % len(cmds)], delay)
        assert not _idlehound_frames(err), f"traceback from idlehound after {delay:.2f} s:\n{err}"
        assert "Aborted!" not in err
        if "Traceback" in err:  # Python's own start-up, before idlehound's first line ran (a slow machine)
            outcomes.append("python start-up")
            continue
        if code == 0 and not err and complete_output is not None and out == complete_output:
            outcomes.append("finished first")  # a loaded machine: the command was done, Python was exiting
            continue
        assert code == 130, f"exit {code} after {delay:.2f} s: {err!r}"
        assert err.strip() == "idlehound: interrupted", err
        outcomes.append(130)
    assert outcomes.count(130) >= TRIALS // 2, outcomes


@pytest.mark.slow  # starts a fresh Python process
def test_library_import_keeps_pythons_handler():
    """Only the CLI process gets the start-up handler: a program importing idlehound sees KeyboardInterrupt."""
    code = "import signal, idlehound; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    r = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "True", r.stderr


@pytest.mark.slow  # starts a fresh Python process
def test_commands_get_keyboard_interrupt_back():
    """Once a command runs, Ctrl-C is Python's again (commands save partial work and exit 130 themselves)."""
    code = (
        "import sys, signal; sys.orig_argv = [sys.executable, '-m', 'idlehound']; "
        "import idlehound, idlehound._startup as s; "
        "before = signal.getsignal(signal.SIGINT) is s._exit_quietly; s.restore(); "
        "print(before, signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    )
    r = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["True", "True"], r.stderr


def test_ctrl_c_wrapped_by_an_import_still_exits_130(capsys):
    """Python 3.11 wraps a KeyboardInterrupt raised in __set_name__ (a class body of a module being imported)
    in RuntimeError; CI once read exit 3, "internal error: ... Error calling __set_name__", for a Ctrl-C."""
    from idlehound import cli

    class Interrupts:
        def __set_name__(self, owner: type, name: str) -> None:
            raise KeyboardInterrupt

    def command() -> None:
        type("Result", (), {"doc": Interrupts()})  # what importing a module with such a class does

    with pytest.raises(SystemExit) as exit_:
        cli._guard(command)()
    assert exit_.value.code == 130
    assert capsys.readouterr().err == "idlehound: interrupted\n"


def test_a_real_bug_still_reads_as_an_internal_error(capsys, monkeypatch):
    from idlehound import cli

    monkeypatch.delenv("IDLEHOUND_DEBUG", raising=False)

    def command() -> None:
        raise RuntimeError("a bug")

    with pytest.raises(SystemExit) as exit_:
        cli._guard(command)()
    assert exit_.value.code == 3 and "internal error: RuntimeError: a bug" in capsys.readouterr().err
