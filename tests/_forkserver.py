"""Runs `python -m MODULE ARGS` / `python -c CODE` for the tests as a fork of one interpreter that has imported
torch already: a fresh interpreter spends 1-3 s of this 2-core machine importing torch (and torch._dynamo, which
the first optimizer step imports) before the module starts; a fork starts it in milliseconds. The fork gets its own
process, process group, cwd, environment, stdin (/dev/null), stdout and stderr, and exit status, as the command
would; the stand-in packages of tests/scripts/tune (fake_hf, fake_pl) named first on PYTHONPATH go first on its
sys.path (the server imports neither transformers nor lightning, so the stand-ins are what the fork imports).

`run(...)` starts the server on first use (one per test session) and answers as `subprocess.run` would.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional


def _child(req: dict) -> None:
    for fd, name in ((1, req["out"] + ".stdout"), (2, req["out"] + ".stderr")):
        f = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(f, fd)
        os.close(f)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own streams
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    os.setpgid(0, 0)  # its own group: a timeout ends what it started too
    os.environ.clear()
    os.environ.update(req["env"])
    os.chdir(req["cwd"])
    front = [p for p in req["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:0] = ["" if req.get("code") is not None else os.getcwd(), *front]  # as `python -c` / `-m` do
    code = 0
    try:
        if req.get("code") is not None:
            sys.argv = ["-c", *req["argv"]]
            exec(compile(req["code"], "<string>", "exec"), {"__name__": "__main__"})
        else:
            import runpy

            sys.argv = [req["module"], *req["argv"]]
            runpy.run_module(req["module"], run_name="__main__", alter_sys=True)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, (int, type(None))):
            print(e.code, file=sys.stderr)
    except KeyboardInterrupt:  # the interpreter's own ending for an uncaught Ctrl-C (the zygote's too)
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _wait(pid: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return -999  # timed out
        time.sleep(0.005)


def serve() -> None:
    del sys.path[0]  # this file's folder: the forks put their own cwd there
    import torch  # noqa: F401  (the point: imported once, before any fork)
    import torch._dynamo  # noqa: F401
    import torch.profiler  # noqa: F401  (`idlehound run` profiles)
    import torch.utils.data  # noqa: F401

    with contextlib.suppress(ImportError):
        import torchvision  # noqa: F401

    print("ready", flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(req)
        print(json.dumps({"status": _wait(pid, req["timeout"])}), flush=True)


class _Server:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="idlehound-forkserver-"))
        self.proc = subprocess.Popen(
            [sys.executable, __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"
        self.n = 0

    def run(self, req: dict) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the fork server died"
        return int(json.loads(line)["status"])

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


_server: Optional[_Server] = None


def cli(*args: object, cwd: Optional[Path] = None, env: Optional[dict] = None, timeout: float = 600):
    """`python -m idlehound *args` as conftest's run_cli runs it (PYTHONUNBUFFERED, env added), in a fork."""
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    return run([str(a) for a in args], module="idlehound", env=full_env, cwd=cwd, timeout=timeout)


def run(
    argv: list[str],
    *,
    module: str = "",
    code: Optional[str] = None,
    env: Optional[dict[str, str]] = None,
    cwd: Optional[Path] = None,
    timeout: float = 300,
    check: bool = False,
) -> subprocess.CompletedProcess:
    """`python -m module *argv` (or `python -c code *argv`) in a fork; stdin is /dev/null, output captured."""
    global _server
    if _server is None:
        _server = _Server()
        atexit.register(_server.close)
    _server.n += 1
    out = str(_server.dir / f"run{_server.n}")
    req = {
        "module": module,
        "code": code,
        "argv": [str(a) for a in argv],
        "env": dict(env if env is not None else os.environ),
        "cwd": str(cwd or os.getcwd()),
        "timeout": timeout,
        "out": out,
    }
    status = _server.run(req)
    stdout, stderr = Path(out + ".stdout").read_text(), Path(out + ".stderr").read_text()
    cmd = [sys.executable, *(["-c", "..."] if code is not None else ["-m", module]), *req["argv"]]
    if status == -999:
        raise subprocess.TimeoutExpired(cmd, timeout, stdout, stderr)
    done = subprocess.CompletedProcess(cmd, status, stdout, stderr)
    if check:
        done.check_returncode()
    return done


class Subprocess:
    """Stands in for the subprocess module in a program that starts its children as `python -m MODULE ...` with
    stdin=DEVNULL and their output captured (tune's _runner): each such call runs as `run(...)` here, a fork of a
    torch-loaded server, and answers as `subprocess.run` would; any other call is subprocess's own."""

    DEVNULL, PIPE, STDOUT = subprocess.DEVNULL, subprocess.PIPE, subprocess.STDOUT
    TimeoutExpired, CalledProcessError = subprocess.TimeoutExpired, subprocess.CalledProcessError
    CompletedProcess = subprocess.CompletedProcess

    @staticmethod
    def run(cmd, *, stdin=None, env=None, timeout=None, capture_output=False, text=False, check=False, **kw):
        cmd = [str(c) for c in cmd]
        forkable = cmd[:2] == [sys.executable, "-m"] and len(cmd) > 2 and stdin == subprocess.DEVNULL
        if not forkable or not capture_output or kw:  # what a fork would not do alike (stdin, cwd, ...)
            opts = dict(stdin=stdin, env=env, timeout=timeout, capture_output=capture_output, text=text)
            return subprocess.run(cmd, check=check, **opts, **kw)
        done = run(cmd[3:], module=cmd[2], env=env, timeout=3600 if timeout is None else timeout, check=check)
        if not text:
            done.stdout, done.stderr = done.stdout.encode(), done.stderr.encode()
        return done


if __name__ == "__main__":
    serve()
