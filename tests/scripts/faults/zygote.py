"""Fault-matrix runner: imports torch and idlehound once, then forks one `idlehound run` per trial.

A fresh interpreter per trial would spend seconds importing torch; a fork starts the CLI in milliseconds, with
its own process, signals, exit status and file descriptors, as a user's command has. Reads one JSON trial a
line on stdin: {"args": [...], "signal": 2 | 15 | null, "delay": s, "timeout": s, "out": path prefix, "tag": str}
and answers one JSON line: {"status": exit code, or -N when signal N killed it, "seconds": wall time, "pid": the
trial's pid, also its process group}.
"""

import contextlib
import json
import os
import signal
import sys
import time

import torch  # noqa: F401  (the point: imported once, before any fork)
import torch._dynamo  # noqa: F401  (the first optimizer step imports it: seconds)
import torch.profiler  # noqa: F401

import idlehound.app  # noqa: F401  (what `idlehound run` does after the capture)
import idlehound.cli as cli
import idlehound.pipeline  # noqa: F401
import idlehound.report.html  # noqa: F401
import idlehound.report.markdown  # noqa: F401
import idlehound.report.tensorboard  # noqa: F401
import idlehound.report.terminal  # noqa: F401

with contextlib.suppress(ImportError):  # what writing the run's TensorBoard scalars imports
    import tensorboard.summary.writer.event_file_writer  # noqa: F401


def child(trial: dict) -> None:
    for fd, suffix in ((1, ".stdout"), (2, ".stderr")):
        f = os.open(trial["out"] + suffix, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(f, fd)
        os.close(f)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 - the process's own streams
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    os.setpgid(0, 0)  # its own process group: any process left in it after the trial is an orphan
    code = 0
    try:
        cli.main(args=trial["args"], prog_name="idlehound")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except KeyboardInterrupt:  # the interpreter's own ending for an uncaught Ctrl-C
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def wait(pid: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return -999
        time.sleep(0.005)


def main() -> None:
    for line in sys.stdin:
        trial = json.loads(line)
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:
            child(trial)
        if trial.get("signal"):
            time.sleep(trial["delay"])
            with contextlib.suppress(ProcessLookupError):  # it ended first
                os.kill(pid, trial["signal"])
        status = wait(pid, trial["timeout"])
        print(json.dumps({"status": status, "seconds": round(time.monotonic() - t0, 3), "pid": pid}), flush=True)


if __name__ == "__main__":
    main()
