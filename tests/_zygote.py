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
    pid: int


class Zygote:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "PYTHONUNBUFFERED": "1",
        }
        self.proc = subprocess.Popen(
            [sys.executable, str(FAULTS / "zygote.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=workdir,
        )

    def run(
        self, *args: object, signal: Optional[int] = None, delay: float = 0.0, timeout: float = 60.0
    ) -> Trial:
        tag = uuid.uuid4().hex[:12]
        out = self.workdir / f"trial-{tag}"
        trial = {
            "args": ["run", *map(str, args)],
            "signal": signal,
            "delay": delay,
            "timeout": timeout,
            "out": str(out),
            "tag": tag,
        }
        self.proc.stdin.write(json.dumps(trial) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the zygote died"
        ans = json.loads(line)
        return Trial(
            ans["status"],
            Path(f"{out}.stdout").read_text(),
            Path(f"{out}.stderr").read_text(),
            ans["seconds"],
            ans["pid"],
        )

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def orphans(trial: Trial) -> list[int]:
    """Processes still alive in the ended trial's process group: what it left behind."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == trial.pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found
