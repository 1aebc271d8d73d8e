"""Finding trace files: a single file, or a TensorBoard log dir in tensorboard_trace_handler layout."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..errors import TraceError
from ..runfolder import match_trace as _match


@dataclass(frozen=True)
class TraceFile:
    path: Path
    run: str
    worker: str
    stamp: int

    @property
    def sort_key(self) -> tuple[int, int]:
        return (self.stamp, self.path.stat().st_mtime_ns)


def list_traces(root: Path) -> list[TraceFile]:
    """Every trace file below root, run = the folder relative to root."""
    out = []
    for p in sorted(root.rglob("*.json*")):
        m = _match(p.name)
        if not m or not p.is_file():
            continue
        run = str(p.parent.relative_to(root)) if p.parent != root else root.name
        out.append(TraceFile(p, run, m.group("worker"), int(m.group("stamp") or 0)))
    return out


def _check_kind(path: Path) -> None:
    """A TraceError that says why path is neither a file nor a folder to read traces from."""
    try:
        mode = path.stat().st_mode
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise TraceError(path, "a symbolic link that loops (it leads back to itself)") from None
        if e.errno == errno.ENOENT and path.is_symlink():
            raise TraceError(
                path, f"a symbolic link to {os.readlink(path)!r}, which does not exist"
            ) from None
        if e.errno == errno.ENOENT:
            raise TraceError(path, "no such file or folder") from None
        raise
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        raise TraceError(
            path, "not a regular file or folder (a FIFO, device or socket): traces are read from files"
        )


def resolve(
    path: Path, run: Optional[str] = None, worker: Optional[str] = None
) -> tuple[TraceFile, list[TraceFile]]:
    """The trace to analyse and the other traces of its run (for listing workers)."""
    _check_kind(path)
    if path.is_file():
        m = _match(path.name)
        tf = TraceFile(
            path, path.parent.name, m.group("worker") if m else path.stem, int((m and m.group("stamp")) or 0)
        )
        return tf, [tf]
    found = list_traces(path)
    if not found:
        raise TraceError(path, "no *.pt.trace.json[.gz] or rank-N.json[.gz] files in this folder")
    if run is not None:
        found = [t for t in found if t.run == run or t.run.endswith("/" + run)]
        if not found:
            raise TraceError(
                path, f"no run named {run!r} (runs: {', '.join(sorted({t.run for t in list_traces(path)}))})"
            )
    newest_run = max(found, key=lambda t: t.sort_key).run
    in_run = [t for t in found if t.run == newest_run]
    if worker is not None:
        chosen = [t for t in in_run if t.worker == worker]
        if not chosen:
            raise TraceError(
                path,
                f"no worker {worker!r} in run {newest_run!r} "
                f"(workers: {', '.join(sorted({t.worker for t in in_run}))})",
            )
        return max(chosen, key=lambda t: t.sort_key), in_run
    return max(in_run, key=lambda t: t.sort_key), in_run
