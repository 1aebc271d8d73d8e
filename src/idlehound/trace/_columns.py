"""Column conversions shared by the two decode paths (msgspec's Event structs and the C decoder's pieces):
times to ns, args to id and number columns, and compacting, joining and rebasing columns."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from itertools import compress, repeat
from typing import Any, Callable

import msgspec
import numpy as np
from numpy.typing import DTypeLike

from ._decode import NAN, NO_ARGS, NO_ID, Args, Event
from ._events import NONE, PH_M, InputTypes

MAX_TS_US = 9.0e15  # |ts| in µs beyond which int64 ns would overflow
EPOCH_NS = 10**18  # 2001-09-09 as Unix-epoch ns: times above are absolute, not relative to a base time
_COLS = {
    "ph": np.int8,
    "cat": np.int16,
    "name": np.int32,
    "pid": np.int64,
    "tid": np.int64,
    "ts": np.int64,
    "dur": np.int64,
    "ext": np.int64,
    "corr": np.int64,
    "py_id": np.int64,
    "py_parent": np.int64,
    "nbytes": np.float64,
}
_ARG_COLS = ("ext", "corr", "py_id", "py_parent", "nbytes")
_ARGS_AT_ONCE = 2048  # events whose args are tuples at once: ~0.6 MB, stays in cache (8192: 2% slower)
ROW_BYTES = sum(np.dtype(t).itemsize for t in _COLS.values())  # one event in every column: 79 bytes
IN_ROW_BYTES = 12  # an event with an input-type list: its index (int64) and the list's id (int32)

_KIND = operator.attrgetter("ph", "cat", "name")
_A = {f: i for i, f in enumerate(Args.__struct_fields__)}  # Args field -> its index in _ASTUPLE's tuple
_ASTUPLE = msgspec.structs.astuple
_FLOAT_OR_NONE = {float, type(None)}
_GET = {k: operator.attrgetter(k) for k in ("ph", "cat", "name", "pid", "tid", "ts", "dur", "args")}


def _float_col(events: Sequence[Event], key: str) -> np.ndarray:
    """A float64 column; None (JSON null) becomes nan."""
    try:
        return np.fromiter(map(_GET[key], events), np.float64, len(events))
    except OverflowError:  # an integer of 309+ digits
        return np.fromiter(map(_huge_as_inf, map(_GET[key], events)), np.float64, len(events))


def _huge_as_inf(v: Any) -> Any:
    """An integer past float range as the float its digits round to (+-inf, as 1e400 decodes), so that it is
    dropped or excluded as out of range like any other; anything else as it is."""
    if type(v) is int and not -(2**1023) < v < 2**1023:
        try:
            return float(v)
        except OverflowError:
            return float("inf") if v > 0 else float("-inf")
    return v


def _arg_columns(args: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The events' args as one tuple per Args field (index by _A). One astuple per event and a transpose cost
    ~12 ns a field; a getattr pass per field ~40 ns, and then most fields are absent everywhere (count, below)."""
    try:
        return list(zip(*map(_ASTUPLE, args)))
    except TypeError:  # "args": null somewhere
        return list(zip(*map(_ASTUPLE, [a or NO_ARGS for a in args])))


def _present(col: tuple[Any, ...]) -> list[int]:
    """Indices of the values that are not None."""
    return list(compress(range(len(col)), map(operator.is_not, col, repeat(None))))


def _arg_ids(col: tuple[Any, ...]) -> np.ndarray:
    """An int64 column of one id argument; NO_ID where absent. Slow path for null or huge ids."""
    n = len(col)
    if col.count(NO_ID) == n:  # absent everywhere (the one default object: an identity test per event)
        return np.full(n, NO_ID, np.int64)
    try:
        return np.fromiter(col, np.int64, n)
    except (TypeError, OverflowError):
        return np.array(
            [v if v is not None and -(2**63) <= v < 2**63 else NO_ID for v in col], dtype=np.int64
        )


def _arg_floats(col: tuple[Any, ...]) -> np.ndarray:
    """A float64 column of one argument; None (JSON null) becomes nan."""
    n = len(col)
    if col.count(NAN) == n:  # the default object (nan == nan is false, but count tests identity first)
        return np.full(n, NAN)
    try:
        return np.fromiter(col, np.float64, n)
    except OverflowError:
        return np.fromiter(map(_huge_as_inf, col), np.float64, n)


def _arg_cols(ids: Callable[[str], np.ndarray], floats: Callable[[str], np.ndarray]) -> dict[str, np.ndarray]:
    """The args columns (_ARG_COLS) from the id and number arguments by Args field name (ids: NO_ID where absent,
    floats: nan), for either path."""
    ext = ids("external_id")
    out = {
        "ext": np.where(ext == NO_ID, ids("external_id_lc"), ext),
        "corr": ids("correlation"),
        "py_id": ids("python_id"),
        "py_parent": ids("python_parent_id"),
    }
    out = {k: _missing_ids(v) for k, v in out.items()}
    nbytes = floats("nbytes")
    out["nbytes"] = np.where(np.isnan(nbytes), floats("mem_bytes"), nbytes)
    return out


def _missing_ids(x: np.ndarray) -> np.ndarray:
    """Absent ids and ids beyond +-2**62 (not real Kineto ids) become NONE."""
    return np.where((x == NO_ID) | (np.abs(x) >= 2**62), NONE, x)


_NARROW = (
    "pid",
    "tid",
    "ext",
    "corr",
    "py_id",
    "py_parent",
)  # ids: compared, sorted, looked up; never summed
_I32 = np.iinfo(np.int32)


def _compact(key: str, col: np.ndarray) -> np.ndarray:
    """The same values in less memory: a column of one value becomes a read-only view of that value (no bytes per
    event: ids a trace does not have, args it never sets), and id columns that fit become int32. Times stay int64.
    Columns are read, never written in place (a change makes a new array), so a read-only view is safe."""
    if col.size < 2:
        return col
    first = col[:1]
    same = (
        np.isnan(col).all() if col.dtype.kind == "f" and np.isnan(first[0]) else not (col != first[0]).any()
    )
    if same:
        return np.broadcast_to(first.copy(), col.shape)
    if key in _NARROW and col.dtype == np.int64 and _I32.min <= col.min() and col.max() <= _I32.max:
        return col.astype(np.int32)
    return col


def _pack(key: str, col: np.ndarray) -> np.ndarray:
    """A compacted column to send between processes: a column of one value as that value (a 0-d array; a
    broadcast view would be pickled at full length)."""
    col = _compact(key, col)
    return col[0].reshape(()).copy() if col.size > 1 and col.strides == (0,) else col


def _join(pieces: list[np.ndarray], dtype: DTypeLike) -> np.ndarray:
    out = np.concatenate(pieces) if pieces else np.zeros(0, dtype=dtype)
    pieces.clear()
    return out


def _remap(col: np.ndarray, local: list[str], interner: dict[str, int]) -> np.ndarray:
    """Ids into local (a worker's interned strings) -> ids into this builder's interner."""
    table = np.array([interner[s] for s in local], dtype=col.dtype)
    return table[col] if len(table) else col


def _us_to_ns(t: np.ndarray) -> np.ndarray:
    """µs (float64) -> int64 ns. Whole µs are converted in integers: at epoch magnitudes (1.7e15 µs) a float
    multiply by 1000 would round to 256 ns."""
    whole = np.floor(t)
    ns: np.ndarray = whole.astype(np.int64) * 1000 + np.rint((t - whole) * 1000.0).astype(np.int64)
    return ns


def _rebase_epoch(cols: dict[str, np.ndarray]) -> int:
    """Make absolute Unix-epoch times (Kineto before baseTimeNanoseconds, PyTorch < 2.4) relative to the
    first timed event; returns the base in epoch ns, or 0 for relative traces.

    Relative Kineto times stay below about a quarter year (< 1e16 ns); epoch times since 2001 are >= 1e18 ns.
    The kind most timed (non-metadata) events have wins; events of the other kind cannot be placed on the
    trace's clock and are marked for dropping in cols["_keep"]. Metadata events keep ts 0.
    """
    ts = cols["ts"]
    timed = cols["ph"] != PH_M
    epoch = timed & (ts >= EPOCH_NS)
    n_epoch, n_timed = int(epoch.sum()), int(timed.sum())
    if n_epoch * 2 <= n_timed:
        if n_epoch:
            cols["_keep"] = ~epoch
        return 0
    base = int(ts[epoch].min())
    cols["ts"] = np.where(epoch, ts - base, 0)
    if n_epoch < n_timed:
        cols["_keep"] = epoch | ~timed
    return base


def _keep_extras(extra: dict[str, Mapping[int, Any]], keep: np.ndarray) -> dict[str, Mapping[int, Any]]:
    new_ix = np.cumsum(keep) - 1
    return {
        k: d.kept(keep) if isinstance(d, InputTypes) else {int(new_ix[i]): v for i, v in d.items() if keep[i]}
        for k, d in extra.items()
    }


def _with_inputs(extra: dict[str, dict[int, Any]], types: InputTypes) -> dict[str, Mapping[int, Any]]:
    """The extras with the input types among them (after the kernel figures, where they always were)."""
    out: dict[str, Mapping[int, Any]] = {}
    for k, v in extra.items():
        out[k] = v
        if k == "occupancy":
            out["input_type"] = types
    return out


def _as_float(v: Any) -> float:
    if isinstance(v, str):
        return float("inf") if v.strip().lower() == "inf" else float("nan")
    return float(_huge_as_inf(v))
