"""Limits for untrusted trace files: uncompressed size, JSON nesting, and batches of bounded size.

A trace is data from someone else. Before it is parsed, its size is capped (a small gzip file can
hold gigabytes) and its nesting depth is checked (deep JSON exhausts the decoder's recursion). The
JSON is copied into a private temporary file and memory-mapped rather than read; the event array is decoded in
pieces of about 1 MiB (trace/_parallel.py), each piece's pages released once decoded, so the JSON and the event
table are not both in memory in full.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import io
import mmap
import os
import stat
import tempfile
import types
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, Optional, Union

import numpy as np

from . import settings
from .errors import TraceError


def _fastest_zlib() -> types.ModuleType:
    """zlib_ng or isal where installed (the same API as zlib, 1.5-3x faster to inflate; pip install
    idlehound[fast]), else zlib."""
    try:
        from zlib_ng import zlib_ng

        fast: types.ModuleType = zlib_ng  # untyped (follow_imports = skip): Any to mypy
        return fast
    except ImportError:
        pass
    try:
        from isal import isal_zlib

        isal: types.ModuleType = isal_zlib
        return isal
    except ImportError:
        return zlib


_zlib = _fastest_zlib()
GZIP_ERRORS = (zlib.error, _zlib.error)  # isal's error is not a zlib.error

ENV_MAX_BYTES = settings.MAX_TRACE_BYTES.name
MAX_GZIP_RATIO = 200  # decompressed / compressed bytes read; Kineto's JSON: 12-28x, a gzip bomb: ~1000x ...
RATIO_FLOOR = 32 * 2**20  # ... past this many decompressed bytes (small files always pass)
FREE_MARGIN = 256 * 2**20  # free space left on the temporary folder's file system after the copy
DEFAULT_MAX_BYTES = 4 * 2**30  # uncompressed JSON; a real trace of this size already needs ~8 GB to analyse
TABLE_RATIO = 2  # the event table may take up to this times the events' JSON (real traces: 0.3-1x) ...
TABLE_FLOOR = 16 * 2**20  # ... plus this, so that small traces always load whatever their events are like
MAX_DEPTH = 64  # Kineto nests about 6 deep (object, events, event, args, shapes); 64 leaves room
_SCAN_BYTES = 2**20
_READ_BYTES = 2**20

_QUOTE, _BACKSLASH, _OPEN, _CLOSE = 1, 2, 3, 4
_CLASS = np.zeros(256, np.int8)
_CLASS[ord('"')], _CLASS[ord("\\")] = _QUOTE, _BACKSLASH
_CLASS[[ord("["), ord("{")]] = _OPEN
_CLASS[[ord("]"), ord("}")]] = _CLOSE
_TABLE = bytes(_CLASS.astype(np.uint8))


def max_trace_bytes(override: Optional[int] = None) -> int:
    """The uncompressed-size limit: the argument, else $IDLEHOUND_MAX_TRACE_BYTES, else 4 GiB."""
    if override is not None:
        if override <= 0:
            raise TraceError(
                ENV_MAX_BYTES, f"the trace size limit must be a positive number of bytes, not {override}"
            )
        return int(override)
    return settings.MAX_TRACE_BYTES.get() or DEFAULT_MAX_BYTES


def max_gzip_ratio() -> float:
    """The decompressed/compressed limit: $IDLEHOUND_MAX_GZIP_RATIO, else MAX_GZIP_RATIO."""
    return settings.MAX_GZIP_RATIO.get() or MAX_GZIP_RATIO


def table_budget(json_bytes: int) -> int:
    """The most memory the event table of `json_bytes` of events may take (issue 14: about 2x the file).
    Events of a few bytes each (`{"ph":"X"}` repeated) would otherwise cost ~80 bytes of columns apiece."""
    return TABLE_RATIO * json_bytes + TABLE_FLOOR


def _too_big(path: Path, limit: int, what: str) -> TraceError:
    return TraceError(
        path,
        f"{what} is over the {size_text(limit)} limit for a trace (set {ENV_MAX_BYTES} or max_bytes to raise it)",
    )


def size_text(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


Buffer = Union[bytes, bytearray, mmap.mmap]


def read_limited(f: io.BufferedIOBase, path: Path, limit: int, gz: bool) -> Buffer:
    """The file's bytes (gunzipped when gz); stops with a TraceError past `limit` bytes.

    Either way the bytes are first copied into an unlinked temporary file that is then mapped (a plain file is
    copied in the kernel): mapped pages can be dropped once parsed (release()), so the JSON need not stay in
    memory while the event table grows, and no other process can shrink that copy under the mapping (the
    file itself could be truncated while read, and a vanished mapped page kills the process with SIGBUS).
    Where no temporary file or mapping can be had, the bytes are read into memory instead.
    """
    if not gz:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise _too_big(path, limit, f"the file ({size_text(size)})")
    spool = _spool()
    if spool is None:
        return _read_whole(f, path, size) if not gz else _gunzip(f, path, limit, bytearray())
    with spool:
        room = _free_space(spool)
        if not gz:
            if size > room:
                raise _no_room(path, size, room)
            _copy(f, spool, path, size)
        else:
            size = _gunzip(f, path, limit, spool, room)
        spool.flush()  # the last piece may still be in the file object's buffer, which the mapping cannot see
        if size:
            with contextlib.suppress(OSError, ValueError):
                return mmap.mmap(spool.fileno(), 0, access=mmap.ACCESS_READ)
        spool.seek(0)
        return spool.read()


def _changed(path: Path) -> TraceError:
    return TraceError(path, "the file changed while it was read (truncated or still being written?)")


def _read_whole(f: io.BufferedIOBase, path: Path, size: int) -> bytearray:
    out = bytearray(size)
    got = f.readinto(out)
    if got != size or os.fstat(f.fileno()).st_size != size:
        raise _changed(path)
    return out


def _copy(f: io.BufferedIOBase, spool: BinaryIO, path: Path, size: int) -> None:
    """Copy the file's `size` bytes into spool (in the kernel where it can); TraceError if the file changes."""
    src, dst, done = f.fileno(), spool.fileno(), 0
    try:
        while done < size:
            n = os.copy_file_range(src, dst, min(size - done, 2**30), done, done)
            if n == 0:
                raise _changed(path)
            done += n
    except (AttributeError, OSError):  # no copy_file_range (not Linux, old kernel, some file systems)
        while done < size:
            piece = os.pread(src, min(size - done, _READ_BYTES), done)
            if not piece:
                raise _changed(path) from None
            os.pwrite(dst, piece, done)
            done += len(piece)
    if os.fstat(src).st_size != size:
        raise _changed(path)


def _free_space(spool: BinaryIO) -> float:
    """Bytes the temporary copy may take: the free space of its file system, less a margin."""
    try:
        st = os.fstatvfs(spool.fileno())
    except (OSError, AttributeError, ValueError):
        return float("inf")
    return max(0, st.f_bavail * st.f_frsize - FREE_MARGIN)


def _no_room(path: Path, size: int, room: float) -> TraceError:
    return TraceError(
        path,
        f"the trace needs more than the {size_text(int(room))} free in the temporary folder "
        f"({tempfile.gettempdir()}, less a margin of {size_text(FREE_MARGIN)}) for its uncompressed copy "
        f"({size_text(size)} so far): free some space or set TMPDIR to a larger file system",
    )


def _bomb(path: Path, ratio: float) -> TraceError:
    return TraceError(
        path,
        f"the decompressed trace is over {ratio:g}x its compressed size, the limit for a trace (a gzip bomb? "
        f"Kineto's JSON compresses about 20x; set {settings.MAX_GZIP_RATIO.name} to raise it)",
    )


def _spool() -> Optional[BinaryIO]:
    try:
        return tempfile.TemporaryFile()  # noqa: SIM115 - the caller closes it with `with`
    except OSError:
        return None


def release(buf: Union[Buffer, memoryview], lo: int, hi: int) -> None:
    """Drop the mapped pages of buf[lo:hi] from this process's memory (they are read back if touched again)."""
    if isinstance(buf, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        lo = -(-lo // mmap.PAGESIZE) * mmap.PAGESIZE
        if hi > lo:
            buf.madvise(mmap.MADV_DONTNEED, lo, hi - lo)


def trim() -> None:
    """Give freed heap memory back to the system (glibc keeps the holes the table's pieces left)."""
    global _LIBC
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _LIBC = False
    if _LIBC:
        _LIBC(0)


_LIBC: Any = None


@contextlib.contextmanager
def small_pages() -> Iterator[None]:
    """Arrays in ordinary 4 KB pages while inside. numpy asks for transparent huge pages for every array of 4 MB
    or more (madvise); where the kernel compacts memory to make them (THP defrag "madvise", as on this project's
    2-core VMs), the first touch of each 2 MB costs about a millisecond: 1.4 of the 6.3 s a 1 GB trace took end to
    end (docs/measurements/speed-2026-12-04.md). The setting is numpy's, process-wide: it is put back on leaving."""
    setter = getter = None
    for mod in ("numpy._core.multiarray", "numpy.core.multiarray"):
        try:
            m = importlib.import_module(mod)
            setter, getter = m._set_madvise_hugepage, m._get_madvise_hugepage
            break
        except (ImportError, AttributeError):
            continue
    if setter is None or getter is None:
        yield
        return
    was = getter()
    setter(False)
    try:
        yield
    finally:
        setter(was)


def _read_bytes(f: io.BufferedIOBase) -> int:
    """Reads of a small file ask for its size, not _READ_BYTES: read(n) first allocates n bytes (a 3 KB sidecar
    would cost 1 MB at the peak of every rank's analysis)."""
    try:
        st = os.fstat(f.fileno())
    except (OSError, AttributeError, io.UnsupportedOperation):  # not a file (a BytesIO)
        return _READ_BYTES
    return max(4096, min(_READ_BYTES, st.st_size)) if stat.S_ISREG(st.st_mode) else _READ_BYTES


def _gunzip(f: io.BufferedIOBase, path: Path, limit: int, out: Any, room: float = float("inf")) -> Any:
    """Decompress into out (a bytearray, returned; or a file, returns the size). Stops past `limit` bytes, past
    `room` (the free space where out is written), and when the output outgrows the compressed bytes it came
    from by more than max_gzip_ratio(): a gzip bomb is refused after tens of MB, not after the limit."""
    size = 0
    ratio = max_gzip_ratio()
    d, fed = _zlib.decompressobj(16 + zlib.MAX_WBITS), False
    chunk = _read_bytes(f)
    data = f.read(chunk)
    read = len(data)
    while data:
        piece = d.decompress(data, _READ_BYTES)
        size += len(piece)
        if size > limit:
            raise _too_big(path, limit, "the decompressed trace")
        if size > RATIO_FLOOR and size > ratio * (read - len(d.unconsumed_tail) - len(d.unused_data)):
            raise _bomb(path, ratio)
        if size > room:
            raise _no_room(path, size, room)
        if isinstance(out, bytearray):
            out += piece
        else:
            out.write(piece)
        fed = True
        data = d.unconsumed_tail
        if d.eof:  # a .gz file may hold several members; zero padding after the last one is ignored
            more = b"" if d.unused_data else f.read(chunk)
            read += len(more)
            data = d.unused_data + more
            if not data.strip(b"\x00"):
                return out if isinstance(out, bytearray) else size
            d, fed = _zlib.decompressobj(16 + zlib.MAX_WBITS), False
        if not data:
            data = f.read(chunk)
            read += len(data)
    if fed:
        raise EOFError("compressed file ended before the end-of-stream marker was reached")
    return out if isinstance(out, bytearray) else size


class Scan:
    """Nesting depth of one JSON value (an array or object), fed piece by piece."""

    def __init__(self) -> None:
        self.depth = 0
        self.max_depth = 0
        self.in_string = False
        self.backslashes = 0  # length of the run of backslashes that ended the previous piece

    def feed(self, a: bytes, offset: int) -> None:
        cls = np.frombuffer(a.translate(_TABLE), np.int8)
        pos = _nonzero(cls)
        c = cls[pos]
        del cls
        is_quote = c == _QUOTE
        if self.backslashes or (c == _BACKSLASH).any():
            q = np.flatnonzero(is_quote)
            slashes = pos[c == _BACKSLASH]
            is_quote[q[_escaped(pos[q], slashes, self.backslashes)]] = False
            self.backslashes = _trailing_run(slashes, len(a), self.backslashes)
        # quotes seen so far, mod 2, says whether a character is inside a string
        inside = (np.cumsum(is_quote, dtype=np.uint8) + self.in_string) & 1
        self.in_string = bool((int(is_quote.sum()) + self.in_string) & 1)
        keep = (c >= _OPEN) & (inside == 0)
        sc = c[keep]
        del pos, c, inside, keep
        delta = (sc == _OPEN).astype(np.int8) - (sc == _CLOSE).astype(np.int8)
        level = np.cumsum(delta, dtype=np.int64) + self.depth
        if level.size:
            self.max_depth = max(self.max_depth, int(level.max()))
            self.depth = int(level[-1])


def _nonzero(cls: np.ndarray) -> np.ndarray:
    """np.flatnonzero, faster on mostly-zero input (long strings): skip zero 8-byte words first."""
    n = cls.size - cls.size % 8
    words = np.flatnonzero(cls[:n].view(np.uint64))
    if words.size > n // 16:
        return np.flatnonzero(cls)
    k = np.flatnonzero(cls[:n].reshape(-1, 8)[words])
    tail = np.flatnonzero(cls[n:]) + n
    at: np.ndarray = np.concatenate([words[k >> 3] * 8 + (k & 7), tail])
    return at


def _escaped(quotes: np.ndarray, slashes: np.ndarray, carried: int) -> np.ndarray:
    """For each quote, whether an odd run of backslashes comes right before it."""
    if slashes.size == 0:
        first: np.ndarray = (quotes == 0) & (carried % 2 == 1)
        return first
    run_start = np.maximum.accumulate(np.where(np.r_[True, np.diff(slashes) != 1], slashes, 0))
    k = np.searchsorted(slashes, quotes) - 1
    kc = np.clip(k, 0, None)
    before = (k >= 0) & (slashes[kc] == quotes - 1)
    start = run_start[kc]
    length = np.where(before, quotes - start, 0)
    # a run that reaches the start of this piece continues the previous piece's run
    length += np.where((before & (start == 0)) | (quotes == 0), carried, 0)
    odd: np.ndarray = length % 2 == 1
    return odd


def _trailing_run(slashes: np.ndarray, size: int, carried: int) -> int:
    if slashes.size == 0 or slashes[-1] != size - 1:
        return 0
    gaps = np.flatnonzero(np.diff(slashes) != 1)
    first = int(slashes[gaps[-1] + 1] if gaps.size else slashes[0])
    return size - first + (carried if first == 0 else 0)


def scan(data: Union[Buffer, memoryview], path: Path, max_depth: int = MAX_DEPTH) -> Scan:
    """Check nesting: TraceError past max_depth."""
    view = memoryview(data).cast("B")
    s = Scan()
    for lo in range(0, len(view), _SCAN_BYTES):
        s.feed(view[lo : lo + _SCAN_BYTES].tobytes(), lo)
        release(data, lo - lo % mmap.PAGESIZE, lo + _SCAN_BYTES)
        if s.max_depth > max_depth:
            raise TraceError(
                path, f"JSON nested more than {max_depth} levels deep: not a torch.profiler trace"
            )
    return s


def offset_in(buf: Buffer, raw: object) -> int:
    """Where raw (a slice of buf, such as msgspec.Raw) starts in buf."""
    return _address(raw) - _address(buf)


def _address(obj: Any) -> int:
    return int(np.frombuffer(obj, np.uint8).__array_interface__["data"][0])
