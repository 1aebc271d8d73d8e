"""Drives tests/scripts/faults/zygote.py: `idlehound run` trials forked from one interpreter that has torch loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .conftest import ROOT, SCRIPTS

FAULTS = SCRIPTS / "faults"


@dataclass
class Trial:
    status: int  # exit code, or -N when signal N ended the process
    stdout: str
    stderr: str
    seconds: float
    tag: str


class Zygote:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
               "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen([sys.executable, str(FAULTS / "zygote.py")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env, cwd=workdir)

    def run(self, *args: object, signal: Optional[int] = None, delay: float = 0.0, timeout: float = 60.0) -> Trial:
        tag = uuid.uuid4().hex[:12]
        out = self.workdir / f"trial-{tag}"
        trial = {"args": ["run", *map(str, args)], "signal": signal, "delay": delay, "timeout": timeout,
                 "out": str(out), "tag": tag}
        self.proc.stdin.write(json.dumps(trial) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the zygote died"
        ans = json.loads(line)
        return Trial(ans["status"], Path(f"{out}.stdout").read_text(), Path(f"{out}.stderr").read_text(),
                     ans["seconds"], tag)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def processes_tagged(tag: str) -> list[int]:
    """Live processes started by a trial (the tag is in their environment): orphans, once the trial ended."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if f"IDLEHOUND_FAULT_TRIAL={tag}".encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
