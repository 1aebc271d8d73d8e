"""What a trace reader makes (a Trace) and the protocol it follows (TraceReader); trace/_load.py holds the list of
readers and picks one for each file. CONTRIBUTING.md ("a trace format") says how to add one."""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .. import _limits
from ._events import EventTable
from ._files import TraceFile

HEAD_BYTES = 4096  # of the file's content that each reader's can_read is shown


@dataclass
class Trace:
    """One loaded trace. `events` holds every event; the rest is the file's metadata."""

    path: Path
    events: EventTable
    device_properties: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    run_files: list[TraceFile] = field(default_factory=list)
    worker: str = ""
    size_bytes: int = 0
    events_close: int = (
        -1
    )  # byte offset of the ']' that closes traceEvents in the (uncompressed) file; -1: unknown

    @property
    def cuda_run(self) -> bool:
        """True when the run used CUDA (metadata says so), whatever the GPU side recorded."""
        gpu_props = any("computeMajor" in p for p in self.device_properties)  # MTIA lists other fields
        return gpu_props or "cuda_runtime_version" in self.metadata

    @property
    def with_stack(self) -> bool:
        return bool(self.metadata.get("with_stack")) or self.events.cat_id("python_function") >= 0


class TraceReader(Protocol):
    """One trace format. The loader shows each reader, in the order of _load.READERS, the file's first bytes;
    the first that claims them reads the file. Bad input is a TraceError(path, one-line problem), never another
    exception: the CLI prints it as one line and exits 2."""

    name: str  # the format, as a person calls it ("Kineto JSON")

    def can_read(self, path: Path, head: bytes) -> bool:
        """Whether the file is of this format: head is its first HEAD_BYTES (inflated when it is gzip)."""
        ...

    def read(self, path: Path, max_bytes: int) -> Trace:
        """The trace in the file; max_bytes caps what is read into memory (uncompressed)."""
        ...


def read_head(path: Path) -> bytes:
    """The first HEAD_BYTES of the file's content, inflated when it is gzip; b"" when they cannot be read (the
    fallback reader then reads the file and names the problem)."""
    try:
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
            if head[:2] == b"\x1f\x8b":
                f.seek(0)
                with gzip.GzipFile(fileobj=f) as g:
                    head = g.read(HEAD_BYTES)
    except (OSError, EOFError, *_limits.GZIP_ERRORS):
        return b""
    return head
