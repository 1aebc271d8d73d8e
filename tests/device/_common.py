"""What the H200 scripts here share: the log line, the command of a profiled run, and its archived run folder.

The scripts run as `python3 tests/device/NAME.py`, which puts this folder on sys.path, so `import _common` finds
this file (a script copied elsewhere needs this file beside it).
"""

import sys
import tarfile
import time
from pathlib import Path
from typing import Optional


def log(out: Path, msg: str) -> None:
    """Print a timed line and append it to OUT/log.txt."""
    line = f"{time.strftime('%H:%M:%S')} {msg}"
    print(line, flush=True)
    with open(out / "log.txt", "a") as f:
        f.write(line + "\n")


def profiled_run(logdir: Path, name: str, skip: int, active: int, script: Path, *args: str) -> list[str]:
    """`idlehound run` of a script: `active` steps recorded after `skip` and 2 warm-up steps, no report."""
    window = ["--skip", str(skip), "--warmup", "2", "--active", str(active)]
    run = [sys.executable, "-m", "idlehound", "run", "--logdir", str(logdir), "--name", name]
    return [*run, *window, "--no-report", str(script), *args]


def archive_newest(logdir: Path, tar_path: Path, name: str) -> Optional[Path]:
    """Pack the newest run folder under logdir into tar_path (as `name/`); that folder, or None when there is none."""
    folders = sorted(logdir.glob("*/run.json"))
    if not folders:
        return None
    folder = folders[-1].parent
    with tarfile.open(tar_path, "w:gz") as tar:
        tar.add(folder, arcname=name)
    return folder
