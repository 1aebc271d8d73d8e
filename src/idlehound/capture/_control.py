"""The control file inside a run folder: how `idlehound capture` (another shell) asks a running job for a window.

A file, not a signal the user's code might also use, nor a socket a cluster might firewall. The asker writes a
temporary file and links it to control/request.json in one step (os.link fails when the name exists, so two
askers at once cannot both win and a reader never sees half a request). The request names a step in the future,
`at_step`: every rank of a torchrun job starts its window at that same step. Each rank polls the file at step
boundaries, at most every POLL_S seconds (one stat), and answers in control/ack.<id>.rankN.json.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from pathlib import Path
from typing import Any, Optional

from ..errors import TraceError
from ..runfolder import CONTROL, read_json

REQUEST = "request.json"
POLL_S = 0.25
LEAD_S = 3.0  # how far ahead a request's step lies: the ranks' poll and the clock's flush fit well inside
MAX_CONTROL_BYTES = 64 * 1024  # a request or an ack is ~200 bytes; the training process never reads a big one


class RequestExists(Exception):
    """Another request is in control/request.json already."""


def control_dir(run_dir: Path) -> Path:
    return run_dir / CONTROL


def ack_name(request_id: str, rank: Optional[int]) -> str:
    return f"ack.{request_id}.rank{0 if rank is None else rank}.json"


def write_request(run_dir: Path, at_step: int, steps: int, by: str) -> dict[str, Any]:
    """Create control/request.json whole, or raise RequestExists; OSError (a full disk) passes up."""
    req = {"id": uuid.uuid4().hex[:12], "at_step": at_step, "steps": steps, "by": by, "asked": time.time()}
    folder = control_dir(run_dir)
    tmp = folder / f".request.{req['id']}.tmp"
    try:
        tmp.write_text(json.dumps(req))
        os.link(tmp, folder / REQUEST)
    except FileExistsError:
        raise RequestExists() from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return req


def read_request(run_dir: Path) -> Optional[dict[str, Any]]:
    """The request in the folder, or None (none, or not readable: a reader never acts on a bad one)."""
    req = _read_small(control_dir(run_dir) / REQUEST)
    ok = (
        isinstance(req, dict)
        and isinstance(req.get("id"), str)
        and isinstance(req.get("at_step"), int)
        and isinstance(req.get("steps"), int)
    )
    return req if ok else None


def retire_request(run_dir: Path, request_id: str) -> None:
    """Move a finished request aside so the next one can be made (only the request with this id).

    Several ranks (and `idlehound capture`) may retire the same request at once: linking done.<id>.json
    succeeds for one of them only, and only that one removes request.json, so a newer request written in
    between is never moved aside in the old one's name."""
    req = read_request(run_dir)
    if req is None or req["id"] != request_id:
        return
    folder = control_dir(run_dir)
    try:
        os.link(folder / REQUEST, folder / f"done.{request_id}.json")
    except OSError:  # another retired it first (or the disk is full: the asker's wait says so)
        return
    with contextlib.suppress(OSError):
        os.unlink(folder / REQUEST)


def write_ack(run_dir: Path, request_id: str, rank: Optional[int], **state: Any) -> None:
    path = control_dir(run_dir) / ack_name(request_id, rank)
    tmp = path.with_name(f".{path.name}.tmp")
    with contextlib.suppress(OSError):  # a full disk: the asker times out and says so
        tmp.write_text(json.dumps({"rank": rank, "time": time.time(), **state}))
        os.replace(tmp, path)


def read_acks(run_dir: Path, request_id: str) -> list[dict[str, Any]]:
    out = []
    for p in sorted(control_dir(run_dir).glob(f"ack.{request_id}.rank*.json")):
        a = _read_small(p)
        if isinstance(a, dict):
            out.append(a)
    return out


def _read_small(path: Path) -> Any:
    """A control file's JSON, or None when it is missing, not JSON, or over MAX_CONTROL_BYTES."""
    try:
        return read_json(path, MAX_CONTROL_BYTES)
    except (TraceError, OSError):
        return None


class Poller:
    """The job's side: looks for a new request at most every POLL_S seconds."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.seen: set[str] = set()
        self._next = 0.0
        self._mtime = 0

    def poll(self, now: float) -> Optional[dict[str, Any]]:
        if now < self._next:
            return None
        self._next = now + POLL_S
        try:
            mtime = (control_dir(self.run_dir) / REQUEST).stat().st_mtime_ns
        except OSError:
            return None
        if mtime == self._mtime:
            return None
        req = read_request(self.run_dir)
        if req is None or req["id"] in self.seen:
            return None
        self._mtime = mtime
        self.seen.add(req["id"])
        return req
