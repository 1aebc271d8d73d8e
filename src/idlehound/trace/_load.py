"""Load a trace: find the file (a file, or the newest trace of a log dir), pick its reader, read it.

READERS is where a trace format is registered (CONTRIBUTING.md, "a trace format"): one entry per format, tried in
order; Kineto JSON, torch.profiler's, is the only one today and also reads what no reader claims, so that a file
of no known format gets its one-line problems ("empty file", "not a torch.profiler trace", ...)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

from .. import _limits
from ..errors import TraceError
from ._files import resolve
from ._kineto import KinetoJson
from ._reader import Trace, TraceReader, read_head

READERS: tuple[TraceReader, ...] = (KinetoJson(),)
FALLBACK: TraceReader = READERS[0]


def load_trace(
    path: Union[str, Path],
    run: Optional[str] = None,
    worker: Optional[str] = None,
    max_bytes: Optional[int] = None,
) -> Trace:
    """Load a `.pt.trace.json[.gz]` file (or a file of another registered format), or the newest trace of a
    TensorBoard log dir.

    max_bytes caps the uncompressed file (default: $IDLEHOUND_MAX_TRACE_BYTES, else 4 GiB).
    Raises TraceError with a one-line message for anything that is not a readable trace.
    """
    limit = _limits.max_trace_bytes(max_bytes)
    try:
        tf, run_files = resolve(Path(path), run=run, worker=worker)
    except OSError as e:  # e.g. a name too long for the file system
        raise TraceError(str(path)[:200], f"cannot read ({e.strerror or e})") from None
    trace = reader_for(tf.path).read(tf.path, limit)
    trace.run_files = run_files
    trace.worker = tf.worker
    workers = sorted({t.worker for t in run_files})
    if len(workers) > 1:
        trace.warnings.append(
            f"{len(workers)} workers in run {tf.run!r} ({', '.join(workers)}); analysing {tf.worker!r} "
            "(choose with --worker, or compare the ranks with --ranks)"
        )
    return trace


def reader_for(path: Path) -> TraceReader:
    """The first reader of READERS that claims the file's first bytes; FALLBACK when none does."""
    head = read_head(path)
    return next((r for r in READERS if r.can_read(path, head)), FALLBACK)
