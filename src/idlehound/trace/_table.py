"""A columnar table of trace events: numpy arrays and interned names, no per-event objects."""

from __future__ import annotations

import operator
import sys
from dataclasses import dataclass, field
from itertools import compress, repeat
from typing import Any

import numpy as np

from .._limits import TABLE_RATIO, size_text, trim
from ._decode import NO_ARGS, NO_ID

PH_CODES = {"X": 0, "i": 1, "I": 1, "s": 2, "f": 3, "M": 4, "C": 5, "B": 6, "E": 7}
PH_X, PH_I, PH_M = 0, 1, 4
NONE = -1  # missing integer argument
COMPACT_EVERY = 16  # pieces (of about 8k events) between joins of their columns
COMPACT_EVENTS = 2**17  # or events (~10 MB of full-width columns)
MAX_TS_US = 9.0e15  # |ts| in µs beyond which int64 ns would overflow
EPOCH_NS = 10**18  # 2001-09-09 as Unix-epoch ns: times above are absolute, not relative to a base time
ENTRY_BYTES = 100  # a kept per-event extra or a new distinct string: its dict slot, key and value, roughly


class Refused(Exception):
    """The events cannot make a table; str() is the one-line problem (pickled back from a worker as it is)."""


@dataclass
class EventTable:
    """All events of one trace. Times are integer nanoseconds relative to the trace's base time.

    Columns (one entry per event): ph (code), cat (id into `cats`), name (id into `names`), pid, tid,
    ts, dur, ext (External id), corr (correlation), py_id, py_parent, nbytes (memcpy bytes or memory
    delta), and sparse per-event extras in `extra` (name -> {event index: value}).
    """

    names: list[str]
    cats: list[str]
    ph: np.ndarray
    cat: np.ndarray
    name: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    ts: np.ndarray
    dur: np.ndarray
    ext: np.ndarray
    corr: np.ndarray
    py_id: np.ndarray
    py_parent: np.ndarray
    nbytes: np.ndarray
    extra: dict[str, dict[int, Any]] = field(default_factory=dict)
    str_ids: list[str] = field(default_factory=list)  # pid/tid values that were strings, encoded as -(i+2)

    def __len__(self) -> int:
        return int(self.ts.shape[0])

    @property
    def end(self) -> np.ndarray:
        return self.ts + self.dur

    def cat_id(self, cat: str) -> int:
        try:
            return self.cats.index(cat)
        except ValueError:
            return -99

    def mask_cat(self, *cats: str, ph: int = PH_X) -> np.ndarray:
        ids = [self.cat_id(c) for c in cats]
        return np.isin(self.cat, ids) & (self.ph == ph)

    def name_ids(self, predicate) -> np.ndarray:
        """Ids of the interned names for which predicate(name) is true."""
        return np.fromiter((i for i, n in enumerate(self.names) if predicate(n)), dtype=np.int64)

    def mask_names(self, predicate) -> np.ndarray:
        return np.isin(self.name, self.name_ids(predicate))

    def name_of(self, i: int) -> str:
        return self.names[int(self.name[i])]


class TableBuilder:
    """Accumulates decoded events batch by batch into compact columns."""

    def __init__(self) -> None:
        self._name_ix = _Interner()
        self._cat_ix = _Interner()
        self._kinds = _Kinds(self._name_ix, self._cat_ix)
        self._str_ix: dict[str, int] = {}
        self._shared: dict = {}
        self._big = 0  # leading entries of each self._cols list that are already joined
        self._pending = 0  # events in the pieces not joined yet
        self._id_codes = _IdCodes(self._id)  # pid/tid value -> int64 code (few distinct values: a small dict)
        self._cols: dict[str, list[np.ndarray]] = {k: [] for k in _COLS}
        self.extra: dict[str, dict[int, Any]] = {
            "blocks_per_sm": {},
            "occupancy": {},
            "input_type": {},
            "total_allocated": {},
            "total_reserved": {},
            "device_type": {},
        }
        self.n = 0
        self.max_bytes: float = float("inf")  # Refused past this estimate of the table's size (bytes())
        self.empty = 0  # events dropped for carrying no time, name or category
        self.bad_times = 0
        self.epoch_base_ns = 0  # set by build() when the times were absolute Unix-epoch µs, rebased
        self.negative_durs = 0

    def add(self, events: list) -> None:
        if not events:
            return
        c = self._cols
        n = len(events)
        # One C-level pass per column (attrgetter + np.fromiter): no per-event tuples or lists.
        t = _float_col(events, "ts")
        # Beyond MAX_TS_US the time would overflow int64 ns: no real profile (nan stays: a missing ts reads as 0).
        bad = np.abs(t) >= MAX_TS_US
        if bad.any():
            keep = [e for e, b in zip(events, bad) if not b]
            self.bad_times += len(events) - len(keep)
            if keep:
                self.add(keep)
            return
        missing = np.isnan(t)
        if missing.any() and self._drop_empty(events, missing):
            return
        # ph, cat and name in one pass: one dict lookup per event on the (ph, cat, name) triple (few distinct).
        kind = np.fromiter(map(self._kinds.__getitem__, map(_KIND, events)), np.intp, n)
        c["ph"].append(self._kinds.ph_of(kind))
        c["cat"].append(self._kinds.cat_of(kind))
        c["name"].append(self._kinds.name_of(kind))
        c["pid"].append(self._id_col(events, "pid"))
        c["tid"].append(self._id_col(events, "tid"))
        c["ts"].append(_us_to_ns(np.where(np.isnan(t), 0.0, t)))
        d = _float_col(events, "dur")
        d = np.where(np.isnan(d), 0.0, d)
        self.negative_durs += int((d < 0).sum())
        c["dur"].append(np.rint(np.clip(d, 0.0, 1e15) * 1000.0).astype(np.int64))
        args = list(
            map(_GET["args"], events)
        )  # read once: each column below is one attribute an event, not two
        try:
            ext = _arg_ids(args, "external_id")
        except AttributeError:  # "args": null somewhere
            args = [a or NO_ARGS for a in args]
            ext = _arg_ids(args, "external_id")
        lc = _arg_ids(args, "external_id_lc")
        c["ext"].append(_missing_ids(np.where(ext == NO_ID, lc, ext)))
        for key, f in (("corr", "correlation"), ("py_id", "python_id"), ("py_parent", "python_parent_id")):
            c[key].append(_missing_ids(_arg_ids(args, f)))
        nbytes = _arg_floats(args, "nbytes")
        c["nbytes"].append(np.where(np.isnan(nbytes), _arg_floats(args, "mem_bytes"), nbytes))
        self._extras(args)
        self.n += n
        self._pending += n
        if self.bytes() > self.max_bytes:
            raise Refused(
                f"its events would take more than {TABLE_RATIO}x the file's size in memory ({self.n:,} events so "
                f"far need ~{size_text(self.bytes())}, over the {size_text(int(self.max_bytes))} allowed): events this "
                "small or this varied are not a torch.profiler trace's"
            )
        # Also by events: a slice of tiny events ({} is 3 bytes) makes 80 bytes of columns an event until joined.
        if len(c["ts"]) - self._big >= COMPACT_EVERY or self._pending >= COMPACT_EVENTS:
            self._compact()

    def _drop_empty(self, events: list, missing: np.ndarray) -> bool:
        """Add the events but those with no time, name or category (`{}`: nothing to place or match, yet each
        would cost a row of every column); False when there is none such."""
        n = len(events)
        empty = missing & ~np.fromiter(map(bool, map(_GET["name"], events)), bool, n)
        empty &= ~np.fromiter(map(bool, map(_GET["cat"], events)), bool, n)
        if not empty.any():
            return False
        keep = list(compress(events, (~empty).tolist()))
        self.empty += n - len(keep)
        self.add(keep)
        return True

    def bytes(self) -> int:
        """The table's memory as built so far, over-estimated: every column at full width (compacting usually
        saves some), the interned strings, and the sparse extras."""
        strings = self._name_ix.nbytes + self._cat_ix.nbytes + self._id_codes.nbytes + self._kinds.nbytes
        extras = sum(map(len, self.extra.values())) * ENTRY_BYTES
        return self.n * ROW_BYTES + strings + extras

    def _compact(self) -> None:
        """Join the columns of the latest pieces. Piece-sized arrays live on the malloc heap, which keeps their
        pages after they are freed; joined ones are mapped on their own and given back when build() joins them."""
        for k, v in self._cols.items():  # compacted: a table of millions of events waits here until build()
            v[self._big :] = [_compact(k, np.concatenate(v[self._big :]))]
        self._big += 1
        self._pending = 0

    def _id_col(self, events: list, key: str) -> np.ndarray:
        try:
            return np.fromiter(map(_GET[key], events), np.int64, len(events))
        except (TypeError, ValueError, OverflowError):  # strings ("Spans", ""), None, or huge numbers
            return np.fromiter(map(self._id_codes.__getitem__, map(_GET[key], events)), np.int64, len(events))

    def _extras(self, args: list) -> None:
        """args: the events' Args (NO_ARGS where absent or null)."""
        x = self.extra
        # C-level scan for the few events that carry one (kernels, shapes, memory events)
        has = np.fromiter(map(operator.ne, map(_EXTRA_FIELDS, args), repeat(_NO_EXTRAS)), bool, len(args))
        # One object per distinct value (share): kept values then pin no memory of the decoded pieces around them.
        n0, share = self.n, self._shared.setdefault
        bps, occ, types = x["blocks_per_sm"], x["occupancy"], x["input_type"]
        for i in np.flatnonzero(
            has
        ).tolist():  # locals and no calls for plain floats: ~20% of events get here
            a = args[i]
            j = n0 + i
            v = a.blocks_per_sm
            if v is not None:
                v = v if type(v) is float else _as_float(v)
                bps[j] = share(v, v)
            v = a.occupancy
            if v is not None:
                v = v if type(v) is float else _as_float(v)
                occ[j] = share(v, v)
            if a.input_type:
                types[j] = self._share_list(a.input_type)  # as recorded; strings compared on use
            if a.total_allocated is not None:
                x["total_allocated"][j] = a.total_allocated
                x["total_reserved"][j] = a.total_reserved
                x["device_type"][j] = a.device_type

    def _share_list(self, v: list) -> list:
        try:
            return self._shared.setdefault(("list", *v), v)
        except TypeError:  # nested lists: not hashable, kept as they are
            return v

    def _id(self, v) -> int:
        if v is None:
            return NONE
        if isinstance(v, str):
            try:
                return int(v)
            except ValueError:
                return -2 - self._str_ix.setdefault(v, len(self._str_ix))
        return v

    def reset(self) -> None:
        max_bytes = self.max_bytes
        type(self).__init__(self)
        self.max_bytes = max_bytes

    def parts(self) -> tuple:
        """What merge() needs, as plain picklable values (sent back from worker processes)."""
        cols = {
            k: _pack(k, np.concatenate(v) if v else np.zeros(0, dtype=_COLS[k]))
            for k, v in self._cols.items()
        }
        return (
            cols,
            list(self._name_ix),
            list(self._cat_ix),
            list(self._str_ix),
            self.extra,
            self.n,
            self.bad_times,
            self.negative_durs,
            self.empty,
        )

    def merge(self, parts: tuple) -> None:
        """Append the events of another builder (its parts()), renumbering its names, categories and string ids."""
        cols, names, cats, str_ids, extra, n, bad_times, negative_durs, empty = parts
        c = self._cols
        for k, v in cols.items():
            if v.ndim == 0:  # one value for all n events (_pack)
                v = np.broadcast_to(v.reshape(1), (n,))
            if k == "name":
                v = _remap(v, names, self._name_ix)
            elif k == "cat":
                v = _remap(v, cats, self._cat_ix)
            elif k in ("pid", "tid") and str_ids:
                v = self._remap_str_ids(v, str_ids)
            c[k].append(v)
        self._big = len(c["ts"])
        for key, d in extra.items():
            self.extra[key].update({j + self.n: val for j, val in d.items()})
        self.n += n
        self.bad_times += bad_times
        self.negative_durs += negative_durs
        self.empty += empty

    def _remap_str_ids(self, col: np.ndarray, str_ids: list[str]) -> np.ndarray:
        new = np.array([-2 - self._str_ix.setdefault(s, len(self._str_ix)) for s in str_ids], dtype=np.int64)
        local = -2 - col
        is_str = (col <= -2) & (local < len(str_ids))
        return np.where(is_str, new[np.where(is_str, local, 0)], col)

    def build(self) -> EventTable:
        cols = {}
        for k in list(self._cols):  # each column's pieces dropped once joined: at most one column held twice
            cols[k] = _compact(k, _join(self._cols.pop(k), _COLS[k]))
            trim()  # hand the pieces' heap memory back before the next column is allocated
        self.epoch_base_ns = _rebase_epoch(cols)
        keep = cols.pop("_keep", None)
        extra = self.extra
        if keep is not None:
            self.bad_times += int((~keep).sum())
            cols = {k: v[keep] for k, v in cols.items()}
            extra = _keep_extras(extra, keep)
        cols = {k: _compact(k, v) for k, v in cols.items()}
        return EventTable(
            names=list(self._name_ix),
            cats=list(self._cat_ix),
            extra=extra,
            str_ids=list(self._str_ix),
            **cols,
        )


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
ROW_BYTES = sum(np.dtype(t).itemsize for t in _COLS.values())  # one event in every column: 79 bytes


class _Interner(dict[str, int]):
    """name -> small int; a new name gets the next number (lookups stay in C for known names)."""

    nbytes = 0  # what the strings and their slots take, roughly

    def __missing__(self, key):
        self.nbytes += sys.getsizeof(key) + ENTRY_BYTES
        v = self[key] = len(self)
        return v


class _Kinds(dict):
    """(ph, cat, name) -> a small int, with that triple's ph code, category id and name id kept in columns
    (names and categories are interned in the order events first show them, as one pass per column would)."""

    def __init__(self, names: _Interner, cats: _Interner) -> None:
        super().__init__()
        self._names, self._cats = names, cats
        self._codes: list[tuple[int, int, int]] = []
        self._arrays: tuple = ()
        self.nbytes = 0

    def __missing__(self, key):
        ph, cat, name = key
        c = self._cats[cat]
        if c >= 2**15:  # the cat column is int16: Kineto writes about 15 categories
            raise Refused(f"more than {2**15:,} event categories ('cat'): not a torch.profiler trace")
        self._codes.append((_PH[ph], c, self._names[name]))
        self._arrays = ()
        self.nbytes += (
            ENTRY_BYTES + 64
        )  # the slot and the key tuple (its strings are counted by the interners)
        v = self[key] = len(self)
        return v

    def _columns(self) -> tuple:
        if not self._arrays:
            ph, cat, name = zip(*self._codes)
            self._arrays = (np.array(ph, np.int8), np.array(cat, np.int16), np.array(name, np.int32))
        return self._arrays

    def ph_of(self, kind: np.ndarray) -> np.ndarray:
        return self._columns()[0][kind]

    def cat_of(self, kind: np.ndarray) -> np.ndarray:
        return self._columns()[1][kind]

    def name_of(self, kind: np.ndarray) -> np.ndarray:
        return self._columns()[2][kind]


class _IdCodes(dict):
    def __init__(self, code) -> None:
        super().__init__()
        self._code = code
        self.nbytes = 0

    def __missing__(self, key):
        self.nbytes += sys.getsizeof(key) + ENTRY_BYTES
        v = self._code(key)
        v = self[key] = v if -(2**63) <= v < 2**63 else NONE  # an id beyond int64 is not a real Kineto id
        return v


class _PhCodes(dict):
    def __missing__(self, key):
        return 9


_PH = _PhCodes(PH_CODES)
_EXTRA_FIELDS = operator.attrgetter("blocks_per_sm", "occupancy", "input_type", "total_allocated")
_KIND = operator.attrgetter("ph", "cat", "name")
_NO_EXTRAS = (None,) * 4
_GET = {k: operator.attrgetter(k) for k in ("ph", "cat", "name", "pid", "tid", "ts", "dur", "args")}


def _float_col(events: list, key: str) -> np.ndarray:
    """A float64 column; None (JSON null) becomes nan."""
    return np.fromiter(map(_GET[key], events), np.float64, len(events))


def _arg_ids(args: list, f: str) -> np.ndarray:
    """An int64 column of one id argument; NO_ID where absent. Slow path for null or huge ids."""
    get = operator.attrgetter(f)
    try:
        return np.fromiter(map(get, args), np.int64, len(args))
    except (TypeError, OverflowError):
        vals = map(get, args)
        return np.array(
            [v if v is not None and -(2**63) <= v < 2**63 else NO_ID for v in vals], dtype=np.int64
        )


def _arg_floats(args: list, f: str) -> np.ndarray:
    """A float64 column of one argument; None (JSON null) becomes nan."""
    return np.fromiter(map(operator.attrgetter(f), args), np.float64, len(args))


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


def _join(pieces: list[np.ndarray], dtype) -> np.ndarray:
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
    return whole.astype(np.int64) * 1000 + np.rint((t - whole) * 1000.0).astype(np.int64)


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


def _keep_extras(extra: dict[str, dict[int, Any]], keep: np.ndarray) -> dict[str, dict[int, Any]]:
    new_ix = np.cumsum(keep) - 1
    return {k: {int(new_ix[i]): v for i, v in d.items() if keep[i]} for k, d in extra.items()}


def _as_float(v) -> float:
    if isinstance(v, str):
        return float("inf") if v.strip().lower() == "inf" else float("nan")
    return float(v)
