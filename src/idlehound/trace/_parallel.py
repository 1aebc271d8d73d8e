"""Decode `traceEvents` in pieces of a few MB, on several cores for large files.

The array is cut at candidate event boundaries (a `,` then whitespace then `{`) without parsing. A cut inside a
string or inside nested args cannot go unnoticed: the piece that ends there is then not a complete JSON array, so
decoding it fails. Pieces are cut from the true start of the array and every piece must decode, so by induction
every cut is a real boundary. If any piece fails to decode as an array, the whole array is read again by the
plain, lenient path. Each piece's events become columns at once, so peak memory is the file plus the columns
plus a few pieces of decoded events, whatever the file size.

Every decoded piece is also checked for nesting depth (the limit of trace/_limits.py) by a scan of its bytes, on
the process that decoded it, and its pages of a mapped file are released once it is decoded: no separate pass
over the whole file is needed.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Optional, Union

import msgspec
import numpy as np

from .. import _limits, settings
from . import _decode
from ._events import Refused
from ._table import Parts, TableBuilder

PIECE_BYTES = 2**20  # one piece of events decoded at a time (about 4k events, ~3 MB of structs)
PIECE_SHARE = 8  # a smaller file's pieces are an eighth of it (at least SMALL_PIECE): its mapped pages and
SMALL_PIECE = 2**16  # decoded piece are a fraction of the file, not all of it (a Ray task's memory per file)
PARALLEL_MIN = 48 * 2**20  # below this, starting worker processes costs more than it saves
_CUT = re.compile(rb",\s*\{")
Source = tuple[
    memoryview, Optional[_limits.Buffer], int
]  # the events array, the mapped file, its offset there
_SHARED: Optional[Source] = None  # inherited by forked workers

_QUOTE, _BACKSLASH, _OPEN, _CLOSE = 1, 2, 3, 4
_DEPTH_CLASS = np.zeros(256, np.uint8)
_DEPTH_CLASS[ord('"')], _DEPTH_CLASS[ord("\\")] = _QUOTE, _BACKSLASH
_DEPTH_CLASS[[ord("["), ord("{")]] = _OPEN
_DEPTH_CLASS[[ord("]"), ord("}")]] = _CLOSE
_DEPTH_TABLE = bytes(_DEPTH_CLASS)
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'"[]{}')
_SIGN = np.zeros(256, np.int8)
_SIGN[[ord("["), ord("{")]], _SIGN[[ord("]"), ord("}")]] = 1, -1


class BadCut(Exception):
    """A cut fell inside an event: the pieces are not the array's elements."""


class TooDeep(Exception):
    """The events nest deeper than _limits.MAX_DEPTH (counting the top-level object)."""


def jobs() -> int:
    """Worker processes to use: IDLEHOUND_JOBS, else the cores this process may run on. (`--ranks` sets
    IDLEHOUND_JOBS in its rank processes so that ranks times pieces stays within the cores.)"""
    asked = settings.JOBS.get()
    if asked is not None:
        return asked
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def fill(
    builder: TableBuilder,
    raw: msgspec.Raw,
    stats: dict[str, int],
    n_jobs: Optional[int] = None,
    buf: Optional[_limits.Buffer] = None,
    at: int = 0,
) -> None:
    """Add every event of the raw `traceEvents` array to builder (bounded memory, parallel when large).

    buf is the mapped file raw lies in, at offset `at`: each piece's pages are released once decoded. Raises
    TooDeep when the events nest too deeply, Refused when their table outgrows builder.max_bytes (worker
    processes each get the share of _limits.table_budget that their range of the array is)."""
    mv = memoryview(raw)
    n_jobs = jobs() if n_jobs is None else n_jobs
    src = (mv, buf, at)
    try:
        if worth_it(len(mv), n_jobs):
            _fill_parallel(builder, src, stats, n_jobs)
        else:
            _decode_range(src, 1, _inner_end(mv), builder, stats)
    except BadCut:
        builder.reset()
        stats.clear()
        if _limits.scan(raw, Path("-"), max_depth=2**31).max_depth + 1 > _limits.MAX_DEPTH:
            raise TooDeep from None
        try:
            raws = _decode.split_events(raw)
        except RecursionError:
            raise TooDeep from None
        for batch in _decode.iter_event_batches(raws, stats):
            builder.add(batch)


def max_depth(piece: bytes) -> int:
    """Nesting depth of a JSON text that starts outside any string (brackets inside strings do not count)."""
    if piece.find(b"\\") >= 0:  # an escaped quote does not end a string: positions needed
        return _max_depth_escaped(piece)
    # Only quotes and brackets (a fifth of the bytes); a bracket is outside strings when the quotes before it
    # are even. (Dropping adjacent quote pairs first with bytes.replace cost more than it saved.)
    a = np.frombuffer(piece.translate(None, _NOT_STRUCTURE), np.uint8)
    quote = (a == ord('"')).view(np.uint8)
    inside = np.bitwise_xor.accumulate(quote)  # parity of the quotes so far (uint8 xor: ~3x a cumsum)
    inside |= quote
    a = a[~inside.view(bool)]
    return int(np.cumsum(_SIGN[a], dtype=np.int32).max()) if a.size else 0


def _max_depth_escaped(piece: bytes) -> int:
    cls = np.frombuffer(piece.translate(_DEPTH_TABLE), np.uint8)
    pos = np.flatnonzero(cls)
    c = cls[pos]
    quote = c == _QUOTE
    q = np.flatnonzero(quote)
    quote[q[_limits._escaped(pos[q], pos[c == _BACKSLASH], 0)]] = False
    del cls, pos, q
    outside = (np.cumsum(quote, dtype=np.uint8) & 1) == 0  # quotes so far, mod 2
    b = c[outside & (c >= _OPEN)]
    if b.size == 0:
        return 0
    return int(np.cumsum(7 - 2 * b.view(np.int8), dtype=np.int32).max())  # open (3): +1, close (4): -1


def worth_it(size: int, n_jobs: Optional[int] = None) -> bool:
    """Whether decoding `size` bytes of events on several processes pays for starting them."""
    n_jobs = jobs() if n_jobs is None else n_jobs
    return n_jobs > 1 and size >= PARALLEL_MIN and _can_fork()


def _can_fork() -> bool:
    """Worker processes need fork (Linux, macOS), a parent that may have children (not a daemon), and no other
    threads (a lock held by one at fork time would stay held in the child: a training process loading a trace)."""
    return (
        "fork" in multiprocessing.get_all_start_methods()
        and not multiprocessing.current_process().daemon
        and threading.active_count() == 1
    )


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


def _pieces(mv: memoryview, lo: int, hi: int) -> Iterator[tuple[int, int]]:
    """(start, end) of pieces of about PIECE_BYTES (an eighth of a smaller range) in mv[lo:hi], each cut found
    just before it is read (a search maps pages of the file: they are released with the piece)."""
    size = min(PIECE_BYTES, max(SMALL_PIECE, (hi - lo) // PIECE_SHARE))
    while lo < hi:
        m = _CUT.search(mv, lo + size, hi) if lo + size < hi else None
        end = m.start() if m else hi
        yield lo, end
        lo = end + 1


def _decode_range(src: Source, lo: int, hi: int, builder: TableBuilder, stats: dict[str, int]) -> None:
    """Decode the elements in mv[lo:hi] piece by piece into builder; raises BadCut on a false boundary, TooDeep
    on nesting past the limit."""
    mv, buf, at = src
    known = [True]  # phases and categories all known so far (_decode.KnownEvent)
    for a, b in _pieces(mv, lo, hi):
        if builder.add_text(mv, a, b):  # the C decoder took it (depth within the limit: it checks)
            if buf is not None:
                _limits.release(buf, at + a - 1, at + b)
            continue
        piece = b"".join((b"[", mv[a:b], b"]"))
        if buf is not None:
            _limits.release(buf, at + a - 1, at + b)
        try:
            events = _decode_piece(piece, known)
        except msgspec.DecodeError:
            raise BadCut from None
        except RecursionError:
            raise TooDeep from None
        # decoded, so the piece is whole elements; +1: the top-level object around the events array
        if max_depth(piece) + 1 > _limits.MAX_DEPTH:
            raise TooDeep
        if events is not None:
            builder.add(events)
            # else this piece's structs stay alive while the next is decoded (2 x ~27 MB for a piece of `{}`)
            del events
            continue
        try:
            raws = _decode.split_events(piece)
        except msgspec.DecodeError:
            raise BadCut from None
        for batch in _decode.iter_event_batches(raws, stats):
            builder.add(batch)


def _decode_piece(piece: bytes, known: list[bool]) -> Optional[Sequence[_decode.Event]]:
    """The piece's events; None when a field has an odd type (fine if the piece is still a whole array).
    known[0]: try KnownEvent first; cleared for the rest of the range at the first piece it does not fit."""
    if known[0]:
        try:
            return _decode.decode_batch(piece, known=True)
        except msgspec.ValidationError:
            known[0] = False  # another phase or category (or an odd type): plain strings from now on
    try:
        return _decode.decode_batch(piece)
    except msgspec.ValidationError:
        return None


def _fill_parallel(builder: TableBuilder, src: Source, stats: dict[str, int], n_jobs: int) -> None:
    global _SHARED
    mv = src[0]
    lo, hi = 1, _inner_end(mv)
    bounds = [lo] + [c + 1 for c in cuts(mv, lo, hi, max(PIECE_BYTES, (hi - lo) // n_jobs))]
    ranges = list(zip(bounds, [b - 1 for b in bounds[1:]] + [hi]))
    _SHARED = src
    try:
        with multiprocessing.get_context("fork").Pool(min(n_jobs, len(ranges)) - 1 or 1) as pool:
            pending = pool.map_async(_work, ranges[1:])
            _decode_range(src, *ranges[0], builder, stats)  # this process takes the first range
            results = pending.get()
    finally:
        _SHARED = None
    if "deep" in results:
        raise TooDeep
    for r in results:
        if isinstance(r, Refused):
            raise r
    done = [res for res in results if isinstance(res, tuple)]
    if len(done) < len(results):  # a None: a worker's range did not start on an event
        raise BadCut
    for parts, st in done:
        builder.merge(parts)
        for k, v in st.items():
            stats[k] = stats.get(k, 0) + v


def _work(rng: tuple[int, int]) -> Union[tuple[Parts, dict[str, int]], str, Refused, None]:
    assert _SHARED is not None
    builder = TableBuilder()
    stats: dict[str, int] = {}
    builder.max_bytes = _limits.table_budget(rng[1] - rng[0])  # this range's share of the whole's budget
    try:
        _decode_range(_SHARED, rng[0], rng[1], builder, stats)
    except BadCut:
        return None
    except TooDeep:
        return "deep"
    except Refused as e:
        return e
    return builder.parts(), stats
