"""Decode `traceEvents` in pieces of a few MB, on several cores for large files.

The array is cut at candidate event boundaries (a `,` then whitespace then `{`) without parsing. A cut inside a
string or inside nested args cannot go unnoticed: the piece that ends there is then not a complete JSON array, so
decoding it fails. Pieces are cut from the true start of the array and every piece must decode, so by induction
every cut is a real boundary. If any piece fails to decode as an array, the whole array is read again by the
plain, lenient path. Each piece's events become columns at once, so peak memory is the file plus the columns
plus a few pieces of decoded events, whatever the file size.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import threading
from typing import Any, Optional

import msgspec

from . import _decode
from ._table import TableBuilder

PIECE_BYTES = 2 * 2**20  # one piece of events decoded at a time (about 8k events, ~6 MB of structs)
PARALLEL_MIN = 48 * 2**20  # below this, starting worker processes costs more than it saves
_CUT = re.compile(rb",\s*\{")
_SHARED: Optional[memoryview] = None  # the events array, inherited by forked workers (no copy)


class BadCut(Exception):
    """A cut fell inside an event: the pieces are not the array's elements."""


def jobs() -> int:
    """Worker processes to use: IDLEHOUND_JOBS, else the cores this process may run on. (`--ranks` sets
    IDLEHOUND_JOBS in its rank processes so that ranks times pieces stays within the cores.)"""
    env = os.environ.get("IDLEHOUND_JOBS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def fill(builder: TableBuilder, raw: msgspec.Raw, stats: dict[str, int], n_jobs: Optional[int] = None) -> None:
    """Add every event of the raw `traceEvents` array to builder (bounded memory, parallel when large)."""
    mv = memoryview(raw)
    n_jobs = jobs() if n_jobs is None else n_jobs
    try:
        if worth_it(len(mv), n_jobs):
            _fill_parallel(builder, mv, stats, n_jobs)
        else:
            _decode_range(mv, 1, _inner_end(mv), builder, stats)
    except BadCut:
        builder.reset()
        stats.clear()
        for batch in _decode.iter_event_batches(_decode.split_events(raw), stats):
            builder.add(batch)


def worth_it(size: int, n_jobs: Optional[int] = None) -> bool:
    """Whether decoding `size` bytes of events on several processes pays for starting them."""
    n_jobs = jobs() if n_jobs is None else n_jobs
    return n_jobs > 1 and size >= PARALLEL_MIN and _can_fork()


def add_piece(builder: TableBuilder, piece: bytes, stats: dict[str, int]) -> None:
    """One JSON array of whole events into builder; odd-typed fields fall back to the lenient path."""
    try:
        builder.add(_decode.decode_batch(piece))
    except msgspec.ValidationError:
        for batch in _decode.iter_event_batches(_decode.split_events(piece), stats):
            builder.add(batch)


def _can_fork() -> bool:
    """Worker processes need fork (Linux, macOS), a parent that may have children (not a daemon), and no other
    threads (a lock held by one at fork time would stay held in the child: a training process loading a trace)."""
    return ("fork" in multiprocessing.get_all_start_methods() and not multiprocessing.current_process().daemon
            and threading.active_count() == 1)


def _inner_end(mv: memoryview) -> int:
    """Index of the array's closing bracket (len when there is none: decoding then reports the bad JSON)."""
    end = len(mv)
    while end > 0 and mv[end - 1] in b" \t\r\n":
        end -= 1
    return end - 1 if end > 1 and mv[end - 1] == ord("]") else len(mv)


def cuts(mv: memoryview, lo: int, hi: int, size: int) -> list[int]:
    """Positions of the commas that cut [lo, hi) into pieces of about size bytes (candidate boundaries)."""
    out = []
    pos = lo + size
    while pos < hi:
        m = _CUT.search(mv, pos, hi)
        if m is None:
            break
        out.append(m.start())
        pos = m.start() + size
    return out


def _decode_range(mv: memoryview, lo: int, hi: int, builder: TableBuilder, stats: dict[str, int]) -> None:
    """Decode the elements in mv[lo:hi] piece by piece into builder; raises BadCut on a false boundary."""
    starts = [lo] + [c + 1 for c in cuts(mv, lo, hi, PIECE_BYTES)]
    ends = [s - 1 for s in starts[1:]] + [hi]
    for a, b in zip(starts, ends):
        piece = b"".join((b"[", mv[a:b], b"]"))
        try:
            builder.add(_decode.decode_batch(piece))
        except msgspec.ValidationError:  # odd-typed fields: fine if the piece is still a whole array
            try:
                raws = _decode.split_events(piece)
            except msgspec.DecodeError:
                raise BadCut from None
            for batch in _decode.iter_event_batches(raws, stats):
                builder.add(batch)
        except msgspec.DecodeError:
            raise BadCut from None


def _fill_parallel(builder: TableBuilder, mv: memoryview, stats: dict[str, int], n_jobs: int) -> None:
    global _SHARED
    lo, hi = 1, _inner_end(mv)
    bounds = [lo] + [c + 1 for c in cuts(mv, lo, hi, max(PIECE_BYTES, (hi - lo) // n_jobs))]
    ranges = list(zip(bounds, [b - 1 for b in bounds[1:]] + [hi]))
    _SHARED = mv
    try:
        with multiprocessing.get_context("fork").Pool(min(n_jobs, len(ranges)) - 1 or 1) as pool:
            pending = pool.map_async(_work, ranges[1:])
            _decode_range(mv, *ranges[0], builder, stats)  # this process takes the first range
            results: list[Any] = pending.get()
    finally:
        _SHARED = None
    if None in results:
        raise BadCut
    for parts, st in results:
        builder.merge(parts)
        for k, v in st.items():
            stats[k] = stats.get(k, 0) + v


def _work(rng: tuple[int, int]) -> Optional[tuple]:
    assert _SHARED is not None
    builder = TableBuilder()
    stats: dict[str, int] = {}
    try:
        _decode_range(_SHARED, rng[0], rng[1], builder, stats)
    except BadCut:
        return None
    return builder.parts(), stats
