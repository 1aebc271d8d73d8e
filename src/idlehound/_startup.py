"""Ctrl-C while the command line starts (imports, argument parsing) exits 130 quietly, as a shell expects.

Python turns a Ctrl-C into KeyboardInterrupt wherever it lands; during `import idlehound` that is a traceback from
inside numpy or click, which the CLI cannot catch (the console script imports before it calls main()). So the
CLI process, and only it, gets a SIGINT handler from the first line of the package until a command starts
(`restore()`); importing idlehound as a library leaves Python's handler alone.
"""

import os
import sys

# mypy takes any name TYPE_CHECKING as true; importing typing for it here would widen the window
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal  # typeshed has no stub for _signal; signal has the same names and types
else:
    import _signal as signal  # the C module: `signal` would import enum first, a window of its own

EXIT_SIGINT = 130


def is_cli() -> bool:
    """True in `idlehound ...` (console script) and `python -m idlehound ...`."""
    name = os.path.basename(sys.argv[0] if sys.argv else "")
    if name in ("idlehound", "idlehound.exe", "idlehound-script.py"):
        return True
    argv = list(getattr(sys, "orig_argv", []))
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("-m", "-midlehound"):
            return a == "-midlehound" or argv[i + 1 : i + 2] == ["idlehound"]
        if a == "-c" or a.startswith("-m") or not a.startswith("-") or a == "-":
            return False  # a command, another module, a script or stdin: not idlehound's CLI
        i += 2 if a in ("-X", "-W", "--check-hash-based-pycs") else 1
    return False


def _exit_quietly(signum: int, frame: object) -> None:
    try:  # noqa: SIM105 - contextlib is not imported yet this early
        sys.stdout.flush()
    except Exception:  # noqa: BLE001, S110 - a flush interrupted mid-write; exiting anyway
        pass
    os.write(2, b"idlehound: interrupted\n")
    os._exit(EXIT_SIGINT)


def quiet_interrupts() -> None:
    """Install the start-up handler in the CLI process, where Python's own handler is still in place."""
    try:
        if is_cli() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _exit_quietly)
    except ValueError:  # not the main thread: leave signals alone
        pass


def restore() -> None:
    """Back to KeyboardInterrupt once a command runs (it handles Ctrl-C itself: exit 130, partial output saved)."""
    try:
        if signal.getsignal(signal.SIGINT) is _exit_quietly:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:
        pass


def ignore_interrupts() -> None:
    """On the way out: the exit code is decided, so a late Ctrl-C must not turn it into death by SIGINT.

    Python's finalization puts SIGINT back to the default action (killed, exit -2) unless it is ignored."""
    try:
        if is_cli():  # a program calling the CLI in-process (tests, notebooks) keeps its own handler
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:
        pass
