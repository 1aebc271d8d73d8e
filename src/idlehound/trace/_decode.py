"""Decode Kineto Chrome-trace JSON into plain event records, fast and tolerant.

The fast path (trace/_parallel.py) decodes pieces of the `traceEvents` array straight into typed msgspec
structs. A batch that fails validation (odd-typed fields) is decoded again event by event, leniently, so one bad
event costs that event only.
"""

from __future__ import annotations

import math
import mmap
from collections.abc import Iterator
from typing import Any, Literal, Optional, Union

import msgspec

Num = Union[int, float]
NO_ID = -(
    2**63
)  # default of an absent id: numeric, so columns fill straight from the structs (None -> slow path)
NAN = float("nan")


class Args(msgspec.Struct, gc=False, omit_defaults=True, frozen=True):
    external_id: Optional[int] = msgspec.field(default=NO_ID, name="External id")
    external_id_lc: Optional[int] = msgspec.field(
        default=NO_ID, name="external id"
    )  # Runtime/Kernel, torch 1.8-1.9
    correlation: Optional[int] = NO_ID
    python_id: Optional[int] = msgspec.field(default=NO_ID, name="Python id")
    python_parent_id: Optional[int] = msgspec.field(default=NO_ID, name="Python parent id")
    nbytes: Optional[Num] = msgspec.field(default=NAN, name="bytes")
    mem_bytes: Optional[Num] = msgspec.field(default=NAN, name="Bytes")
    total_allocated: Optional[Num] = msgspec.field(default=None, name="Total Allocated")
    total_reserved: Optional[Num] = msgspec.field(default=None, name="Total Reserved")
    device_type: Optional[int] = msgspec.field(default=None, name="Device Type")
    blocks_per_sm: Optional[Union[float, str]] = msgspec.field(default=None, name="blocks per SM")
    occupancy: Optional[Union[float, str]] = msgspec.field(default=None, name="est. achieved occupancy %")
    input_type: Optional[list[Any]] = msgspec.field(default=None, name="Input type")
    # Only what the table reads: every field decoded costs objects per event ("Input Dims" alone ~10% of the decode)


NO_ARGS = Args()  # shared by every event without args (frozen, so sharing is safe)


class Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: Union[int, str, None] = -1
    tid: Union[int, str, None] = -1
    ts: Optional[Num] = NAN
    dur: Optional[Num] = NAN
    args: Optional[Args] = NO_ARGS


# Chrome's phases and the categories Kineto writes (libkineto ActivityType names, its flow and trace-span
# categories, the names of torch 1.8-1.9). A value listed here decodes to one shared string: no new object an
# event and a hash kept for the (ph, cat, name) lookup. A piece with any other value is decoded with plain strings.
Phase = Literal[
    "X", "B", "E", "i", "I", "s", "t", "f", "M", "C", "b", "n", "e", "P", "N", "O", "D", "R", "c", ""
]
Category = Literal[
    "cpu_op",
    "user_annotation",
    "gpu_user_annotation",
    "gpu_memcpy",
    "gpu_memset",
    "kernel",
    "external_correlation",
    "cuda_runtime",
    "cuda_driver",
    "cuda_sync",
    "cpu_instant_event",
    "python_function",
    "overhead",
    "glow_runtime",
    "cuda_profiler_range",
    "mtia_runtime",
    "mtia_ccp_events",
    "hpu_op",
    "xpu_runtime",
    "xpu_driver",
    "collective_comm",
    "privateuse1_runtime",
    "privateuse1_driver",
    "ac2g",
    "fwdbwd",
    "Trace",
    "Operator",
    "Runtime",
    "Kernel",
    "Memcpy",
    "Memset",
    "",
]


class KnownEvent(Event, gc=False):
    """An Event whose phase and category are among the known ones."""

    ph: Phase = ""
    cat: Category = ""


_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_BATCH = msgspec.json.Decoder(list[Event])
_KNOWN_BATCH = msgspec.json.Decoder(list[KnownEvent])
_ONE = msgspec.json.Decoder(Event)
_ANY = msgspec.json.Decoder()

BATCH_SIZE = 50_000


def decode_top(buf: Union[bytes, bytearray, memoryview, mmap.mmap]) -> dict[str, msgspec.Raw]:
    """Top-level keys of the trace, each still undecoded. Raises msgspec errors on bad JSON."""
    return _TOP.decode(buf)


def decode_batch(buf: bytes, known: bool = False) -> Union[list[Event], list[KnownEvent]]:
    """A JSON array of events, typed; raises msgspec errors on bad JSON or odd-typed fields (and, when known,
    on a phase or category that is not a KnownEvent's)."""
    return (_KNOWN_BATCH if known else _BATCH).decode(buf)


def split_events(raw: Union[msgspec.Raw, bytes]) -> list[msgspec.Raw]:
    return _RAW_LIST.decode(raw)


def decode_value(raw: msgspec.Raw) -> Any:
    return _ANY.decode(raw)


def iter_event_batches(raws: list[msgspec.Raw], stats: dict[str, int]) -> Iterator[list[Event]]:
    """Yield lists of Event, BATCH_SIZE at a time. Counts skipped events in stats["malformed"]."""
    for lo in range(0, len(raws), BATCH_SIZE):
        chunk = raws[lo : lo + BATCH_SIZE]
        joined = b"[" + b",".join(chunk) + b"]"
        try:
            yield _BATCH.decode(joined)
        except (msgspec.ValidationError, msgspec.DecodeError):  # odd types, or bad bytes inside a string
            yield [ev for ev in (_lenient(r, stats) for r in chunk) if ev is not None]


def _lenient(raw: msgspec.Raw, stats: dict[str, int]) -> Optional[Event]:
    try:
        return _ONE.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        pass
    try:
        obj = _ANY.decode(raw)
    except msgspec.DecodeError:
        stats["malformed"] = stats.get("malformed", 0) + 1
        return None
    if not isinstance(obj, dict):
        stats["malformed"] = stats.get("malformed", 0) + 1
        return None
    return _coerce(obj, stats)


def _coerce(obj: dict[str, Any], stats: dict[str, int]) -> Optional[Event]:
    """Keep what can be trusted from an event with odd-typed fields; drop the rest."""
    ts = _num(obj.get("ts"))
    dur = _num(obj.get("dur"))
    if obj.get("ts") is not None and ts is None:
        stats["malformed"] = stats.get("malformed", 0) + 1
        return None
    args = obj.get("args")
    return Event(
        ph=_str(obj.get("ph")),
        cat=_str(obj.get("cat")),
        name=_str(obj.get("name")),
        pid=_id(obj.get("pid")),
        tid=_id(obj.get("tid")),
        ts=ts,
        dur=dur,
        args=_coerce_args(args) if isinstance(args, dict) else NO_ARGS,
    )


def _coerce_args(a: dict[str, Any]) -> Args:
    out: dict[str, Any] = {}
    for f in Args.__struct_fields__:
        key = Args.__struct_encode_fields__[Args.__struct_fields__.index(f)]
        v = a.get(key)
        if v is None:
            continue
        if f in ("blocks_per_sm", "occupancy"):
            v = _num(v)
        elif f == "input_type":
            v = v if isinstance(v, list) else None
        elif f in ("nbytes", "mem_bytes", "total_allocated", "total_reserved"):
            v = _num(v)
        else:
            v = _int(v)
        if v is not None:
            out[f] = v
    return Args(**out)


def _num(v: Any) -> Optional[float]:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:  # an integer of 309+ digits: out of range, as 1e400 is
        return None
    return f if math.isfinite(f) else None


def _int(v: Any) -> Optional[int]:
    if isinstance(v, bool) or not isinstance(v, int):
        return None
    return v if -(2**63) <= v < 2**63 else None


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _id(v: Any) -> Union[int, str, None]:
    if isinstance(v, str):
        return v
    return _int(v)
