"""Where capture writes: an absolute, writable log folder and a fresh run folder inside it, never outside."""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path

from ..errors import CaptureError
from ._layout import run_file

MAX_NAME = 100  # a run name is one folder name; long enough for any label, short of NAME_MAX (255)


def check_run_name(name: str) -> str:
    """A run name must be one plain folder name: it can never point outside --logdir."""
    bad = (
        not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name or name.startswith("-")
    )
    if bad:
        raise CaptureError(
            f"--name {name!r}: a run name is one folder name (no '/', '\\', '..', or leading '-')"
        )
    if len(name) > MAX_NAME:
        raise CaptureError(
            f"--name: {len(name)} characters is too long for a folder name (at most {MAX_NAME})"
        )
    return name


def usable_logdir(logdir: Path) -> Path:
    """The log folder as an absolute path (a later os.chdir in the script cannot move it), created and writable."""
    path = Path(os.path.abspath(logdir))
    try:
        if path.exists() and not path.is_dir():
            raise CaptureError(f"{logdir}: --logdir is a file, not a folder")
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CaptureError(f"{logdir}: cannot create the log folder ({e.strerror or e})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise CaptureError(f"{logdir}: the log folder is not writable")
    return path


def make_dir(path: Path, exist_ok: bool = False) -> Path:
    """mkdir with a one-line CaptureError for the ways it fails (read-only, name too long, a file in the way)."""
    try:
        path.mkdir(parents=True, exist_ok=exist_ok)
    except FileExistsError:
        raise
    except OSError as e:
        raise CaptureError(f"{path}: cannot create the run folder ({e.strerror or e})") from None
    return path


def new_run_dir(logdir: Path, label: str) -> Path:
    """A fresh folder under logdir; never reuses an existing one."""
    root = usable_logdir(logdir)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = f"{check_run_name(label)}-{stamp}"
    for i in range(1000):
        try:
            return make_dir(root / (base if i == 0 else f"{base}-{i}"))
        except FileExistsError:
            continue
    raise CaptureError(f"{logdir}: could not create a new run folder")


def launch_tag() -> str:
    """The same for every local rank of one torchrun launch, different for the next launch with the same job id.

    The launching agent is every rank's parent; its pid and start time name one launch.
    """
    run_id = os.environ.get("TORCHELASTIC_RUN_ID", "none")
    agent = os.getppid()
    started = ""
    try:
        with open(f"/proc/{agent}/stat") as f:  # field 22: start time in clock ticks since boot
            started = f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        pass
    tag = f"agent{agent}" + (f"t{started}" if started else "")
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    if restart not in ("", "0"):  # an elastic restart of the same launch: its own folder, the failed try kept
        tag += f"-restart{int(restart) if restart.isdigit() else 'x'}"
    return tag if run_id in ("", "none") else f"{check_run_name(run_id)}-{tag}"


def shared_run_dir(logdir: Path, label: str, rank: int) -> Path:
    """The folder all local ranks of one torchrun launch share; refused when this rank's files are already there."""
    stamp = _dt.datetime.now().strftime("%Y%m%d")
    p = make_dir(usable_logdir(logdir) / f"{check_run_name(label)}-{stamp}-{launch_tag()}", exist_ok=True)
    if run_file(p, rank).exists():
        raise CaptureError(f"{p}: already holds rank {rank} of another launch; not overwriting it")
    return p
