"""The Kineto JSON reader: one torch.profiler trace file into a Trace (its metadata and a columnar EventTable)."""

from __future__ import annotations

import contextlib
import gc
import re
from pathlib import Path
from typing import Any, Optional, Union

import msgspec

from .. import _limits
from ..errors import TraceError
from . import _decode, _parallel
from ._events import EventTable, Refused
from ._reader import Trace
from ._table import TableBuilder

KINETO_CATS = {
    "cpu_op",
    "user_annotation",
    "gpu_user_annotation",
    "kernel",
    "gpu_memcpy",
    "gpu_memset",
    "cuda_runtime",
    "cuda_driver",
    "python_function",
    "cpu_instant_event",
    "cuda_sync",
    "Kernel",
    "Memcpy",
    "Memset",
    "Runtime",
    "Operator",
}
_META_KEYS = (
    "schemaVersion",
    "trace_id",
    "with_stack",
    "record_shapes",
    "profile_memory",
    "with_modules",
    "with_flops",
    "cuda_driver_version",
    "cuda_runtime_version",
    "cupti_version",
    "host_name",
    "distributedInfo",
    "displayTimeUnit",
    "baseTimeNanoseconds",
)
_BOM = b"\xef\xbb\xbf"  # UTF-8's byte-order mark


class KinetoJson:
    """torch.profiler's trace: Chrome trace-event JSON as Kineto writes it (`.pt.trace.json[.gz]`)."""

    name = "Kineto JSON"

    def can_read(self, path: Path, head: bytes) -> bool:
        """A JSON object at the top (a byte-order mark before it is claimed too, to be named as the problem)."""
        text = head.lstrip(b" \t\r\n")
        return text.startswith(b"{") or text.startswith(_BOM)

    def read(self, path: Path, max_bytes: int) -> Trace:
        # No local name for the bytes: the parser drops them once the events are in the table.
        return parse_trace_bytes(_read(path, max_bytes), path)


def _read(path: Path, limit: int) -> _limits.Buffer:
    try:
        with open(path, "rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
            f.seek(0)
            return _limits.read_limited(f, path, limit, gz)
    except (OSError, EOFError, MemoryError, *_limits.GZIP_ERRORS) as e:
        problem = "truncated gzip file" if isinstance(e, EOFError) else f"cannot read ({e})"
        if isinstance(e, _limits.GZIP_ERRORS):
            problem = f"corrupt gzip data ({e})"
        elif isinstance(e, MemoryError):
            problem = f"not enough memory to read it (lower {_limits.ENV_MAX_BYTES} to fail sooner)"
        raise TraceError(path, problem) from None


def parse_trace_bytes(buf: _limits.Buffer, path: Union[str, Path] = "<bytes>") -> Trace:
    """Parse trace JSON already in memory (tests and the benchmark use this directly)."""
    path = Path(path)
    if not len(buf) or (len(buf) < 2**20 and _NOT_SPACE.search(buf) is None):  # no copy of the file
        raise TraceError(path, "empty file")
    if buf[:3] == _BOM:
        raise TraceError(
            path,
            "starts with a UTF-8 byte-order mark (bytes EF BB BF), which JSON does not allow and torch.profiler "
            "never writes: the file was re-saved by an editor; remove the mark",
        )
    box = [buf]  # no other name for the bytes: _parse drops them once the events are in the table
    del buf
    guess = _guess_top(box[0])
    if guess is not None:
        try:
            return _parse(box, path, *guess)
        except _WrongGuess:
            pass
    return _parse(box, path, *_decode_top(box[0], path))


_NOT_SPACE = re.compile(rb"[^ \t\n\r\x0b\x0c]")  # what bytes.isspace() counts as space


class _WrongGuess(Exception):
    """The events array found by _guess_top did not decode as one: the full top-level decode decides."""


def _decode_top(buf: _limits.Buffer, path: Path) -> tuple[dict[str, msgspec.Raw], bool]:
    try:  # msgspec stops at its recursion limit: deep JSON is a RecursionError, never a crash
        return _decode.decode_top(buf), False
    except RecursionError:
        raise TraceError(path, _TOO_DEEP) from None
    except msgspec.ValidationError:
        raise TraceError(path, "not a torch.profiler trace (the top level is not a JSON object)") from None
    except msgspec.DecodeError as e:
        raise TraceError(path, f"invalid or truncated JSON ({e})") from None


_GUESS_MAX = 16 << 20  # bytes before or after the events array that the guess decodes; more: the full decode


def _guess_top(buf: _limits.Buffer) -> Optional[tuple[dict[str, msgspec.Raw], bool]]:
    """The top level as torch.profiler writes it ({..., "traceEvents": [...], "traceName": ...}), without
    reading the events array (the full decode reads every byte of it once just to find its end: ~8% of the
    load). The array starts after the first "traceEvents" key whose text before it decodes as a top-level
    object's start, and ends at the file's last "]" if the text after it decodes as an object's end. A "]"
    there that does not close the array makes the events fail to decode as one array (_WrongGuess); None when
    the layout does not fit."""
    key = buf.find(b'"traceEvents"')
    close = buf.rfind(b"]")
    if key < 0 or key > _GUESS_MAX or close < key or len(buf) - close > _GUESS_MAX:
        return None
    colon = key + len(b'"traceEvents"')
    while colon < close and buf[colon : colon + 1] in b" \t\r\n":
        colon += 1
    start = colon + 1
    while start < close and buf[start : start + 1] in b" \t\r\n":
        start += 1
    if buf[colon : colon + 1] != b":" or buf[start : start + 1] != b"[":
        return None
    try:  # "traceEvents": 0 stands for the array, so that each part is a whole object
        before = _decode.decode_top(bytes(buf[:key]) + b'"traceEvents":0}')
        after = _decode.decode_top(b'{"traceEvents":0' + bytes(buf[close + 1 :]))
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    if bytes(after.pop("traceEvents")) != b"0":  # the key again after the array: the last one counts
        return None
    before.pop("traceEvents")
    return {**before, "traceEvents": msgspec.Raw(memoryview(buf)[start : close + 1]), **after}, True


def _parse(box: list[_limits.Buffer], path: Path, top: dict[str, msgspec.Raw], guessed: bool) -> Trace:
    buf = box[0]
    size = len(buf)
    if "traceEvents" not in top:
        _check_depth(buf, 0, 0, path)
        raise TraceError(path, _no_events_problem(top))
    raw_events = top.pop("traceEvents")
    if bytes(memoryview(raw_events)[:1]) != b"[":
        raise TraceError(path, "'traceEvents' is not a list of events")
    at = _limits.offset_in(buf, raw_events)
    close = at + len(memoryview(raw_events)) - 1
    _check_depth(buf, at, len(memoryview(raw_events)), path)  # the events are checked piece by piece
    meta = _metadata(top)
    top_keys = frozenset(top)
    _limits.release(buf, 0, size)  # decoding the top level read every page once
    del top  # the events' bytes stay alive through raw_events (and buf, mapped pages released as parsed)
    stats: dict[str, int] = {}
    builder = TableBuilder()
    builder.max_bytes = _limits.table_budget(len(memoryview(raw_events)))
    # Millions of short-lived objects, none in cycles: the cyclic GC would only rescan them again and again.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            _parallel.fill(
                builder, raw_events, stats, buf=buf, at=at
            )  # pieces of ~2 MB, on several cores if large
        except (_parallel.TooDeep, msgspec.ValidationError, msgspec.DecodeError, RecursionError):
            if guessed:  # perhaps not the array's end: decode the top level in full
                raise _WrongGuess from None
            raise
        del raw_events, buf
        box.clear()
        events = builder.build()
    except _parallel.TooDeep:
        raise TraceError(path, _TOO_DEEP) from None
    except Refused as e:
        raise TraceError(path, str(e)) from None
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        raise TraceError(path, "'traceEvents' is not a list of events") from None
    finally:
        if was_enabled:
            gc.enable()
    _check_usable(path, top_keys, events, stats, builder)
    trace = Trace(path=path, events=events, size_bytes=size, events_close=close)
    trace.metadata, trace.device_properties = meta
    if builder.epoch_base_ns and "baseTimeNanoseconds" not in trace.metadata:
        # Older Kineto wrote absolute epoch µs; the table now counts from the first event, so that is the base.
        trace.metadata["baseTimeNanoseconds"] = builder.epoch_base_ns
        trace.metadata["epoch_timestamps"] = True
    _note_problems(trace, stats, builder)
    return trace


_TOO_DEEP = f"JSON nested more than {_limits.MAX_DEPTH} levels deep: not a torch.profiler trace"


def _check_depth(buf: _limits.Buffer, at: int, n: int, path: Path) -> None:
    """Nesting depth of everything but the events array buf[at:at + n] (whose pieces are checked as decoded)."""
    s = _limits.Scan()
    for lo, hi in ((0, at), (at + n, len(buf))):
        if lo and n:
            s.feed(b"[]", at)  # the events array, one level below the top
        for x in range(lo, hi, 2**20):
            s.feed(bytes(buf[x : min(hi, x + 2**20)]), x)
    if s.max_depth > _limits.MAX_DEPTH:
        raise TraceError(path, _TOO_DEEP)


# Top-level keys only Kineto writes: a file with them is a torch.profiler trace even when no event is usable.
_KINETO_KEYS = ("schemaVersion", "deviceProperties", "baseTimeNanoseconds", "distributedInfo", "traceName")


def _no_events_problem(top: dict[str, msgspec.Raw]) -> str:
    if "nodes" in top and "schema" in top:
        return (
            "a PyTorch execution trace (ExecutionTraceObserver 'nodes'), not a torch.profiler (Kineto) trace: "
            "profile with torch.profiler and pass its .pt.trace.json"
        )
    return "no 'traceEvents' key: not a torch.profiler (Kineto) trace"


def _check_usable(
    path: Path, top: frozenset[str], events: EventTable, stats: dict[str, int], b: TableBuilder
) -> None:
    """Raise a one-line TraceError that says what is wrong when the events cannot be analysed."""
    skipped = stats.get("malformed", 0) + b.bad_times + b.empty
    if b.n == 0 and not skipped:
        raise TraceError(path, "'traceEvents' is empty: the profiler recorded nothing")
    if len(events) == 0:
        why = ", ".join(
            x
            for x in (
                f"{b.bad_times} with a 'ts' out of range" if b.bad_times else "",
                f"{stats['malformed']} with a 'ts' that is not a number or not an object"
                if stats.get("malformed")
                else "",
                f"{b.empty} with no 'ts', 'name' or 'cat'" if b.empty else "",
            )
            if x
        )
        raise TraceError(path, f"none of the {skipped} events is usable ({why})")
    if KINETO_CATS.intersection(events.cats):
        return
    seen = ", ".join(sorted(c for c in events.cats if c)[:6]) or "none"
    if any(k in top for k in _KINETO_KEYS):
        raise TraceError(
            path,
            f"a Kineto trace, but no event has a 'cat' this version reads "
            f"(cpu_op, kernel, ...; categories in the file: {seen})",
        )
    raise TraceError(
        path,
        f"no torch.profiler events (cpu_op, kernel, ...; categories in the file: {seen}): "
        "this looks like a Chrome trace from another tool",
    )


def _metadata(top: dict[str, msgspec.Raw]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    meta = {}
    for k in _META_KEYS:
        if k in top:
            with contextlib.suppress(msgspec.DecodeError):
                meta[k] = _decode.decode_value(top[k])
    props = []
    if "deviceProperties" in top:
        try:
            val = _decode.decode_value(top["deviceProperties"])
            props = [p for p in val if isinstance(p, dict)] if isinstance(val, list) else []
        except msgspec.DecodeError:
            props = []
    return meta, props


def _note_problems(trace: Trace, stats: dict[str, int], b: TableBuilder) -> None:
    skipped = stats.get("malformed", 0) + b.bad_times
    if skipped:
        trace.warnings.append(f"skipped {skipped} malformed event(s)")
    if b.empty:
        trace.warnings.append(
            f"skipped {b.empty} event(s) with no 'ts', 'name' or 'cat' (nothing to analyse)"
        )
    if b.negative_durs:
        trace.warnings.append(f"{b.negative_durs} event(s) had a negative duration, counted as 0")
