"""A columnar table of trace events: numpy arrays and interned names, no per-event objects."""

from __future__ import annotations

import operator
import sys
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from typing import Any, Callable, NamedTuple, Optional

import msgspec
import numpy as np

from .. import settings
from .._limits import TABLE_RATIO, size_text, trim
from ._decode import NAN, NO_ARGS, NO_ID, Args

try:
    from . import _native  # the C decoder (setup.py builds it); absent where it was not built
except ImportError:  # pragma: no cover - depends on the install
    _native = None  # type: ignore[assignment]

PH_CODES = {"X": 0, "i": 1, "I": 1, "s": 2, "f": 3, "M": 4, "C": 5, "B": 6, "E": 7}
PH_X, PH_I, PH_M = 0, 1, 4
NONE = -1  # missing integer argument
COMPACT_EVERY = 16  # pieces (of about 8k events) between joins of their columns
COMPACT_EVENTS = 2**17  # or events (~10 MB of full-width columns)
MAX_TS_US = 9.0e15  # |ts| in µs beyond which int64 ns would overflow
EPOCH_NS = 10**18  # 2001-09-09 as Unix-epoch ns: times above are absolute, not relative to a base time
NATIVE_SHARE = 1 / 16  # of the table's budget, that the C decoder's copies of distinct names may take ...
NATIVE_FLOOR = 4 * 2**20  # ... or this much
ENTRY_BYTES = 100  # a kept per-event extra or a new distinct string: its dict slot, key and value, roughly


class Refused(Exception):
    """The events cannot make a table; str() is the one-line problem (pickled back from a worker as it is)."""


@dataclass
class EventTable:
    """All events of one trace. Times are integer nanoseconds relative to the trace's base time.

    Columns (one entry per event): ph (code), cat (id into `cats`), name (id into `names`), pid, tid,
    ts, dur, ext (External id), corr (correlation), py_id, py_parent, nbytes (memcpy bytes or memory
    delta), and sparse per-event extras in `extra` (name -> {event index: value}; "input_type" is an InputTypes).
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
    extra: dict[str, Mapping[int, Any]] = field(default_factory=dict)
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

    def input_types(self, rows: np.ndarray) -> list:
        """The input-type lists of these events (() where one has none), each distinct one decoded once."""
        t = self.extra.get("input_type", {})
        if isinstance(t, InputTypes):
            return t.lists(rows)
        return [t.get(r, ()) for r in np.asarray(rows).tolist()]


class TableBuilder:
    """Accumulates decoded events batch by batch into compact columns."""

    def __init__(self) -> None:
        self._name_ix = _Interner()
        self._cat_ix = _Interner()
        self._kinds = _Kinds(self._name_ix, self._cat_ix)
        self._str_ix: dict[str, int] = {}
        self._shared: dict = {}  # float -> the one object kept for it
        # Input-type lists: list (as JSON text) -> its id; and the events that have one (int64 indices) with the
        # id of their list (int32), piece by piece.
        self._inputs = _InputTexts()
        self._in_rows: list[np.ndarray] = []
        self._in_ids: list[np.ndarray] = []
        self._in_n = 0
        self._in_big = 0  # leading entries of _in_rows and _in_ids already joined
        self._big = 0  # leading entries of each self._cols list that are already joined
        self._pending = 0  # events in the pieces not joined yet
        self._id_codes = _IdCodes(self._id)  # pid/tid value -> int64 code (few distinct values: a small dict)
        self._native = _new_decoder()  # None: every piece goes the msgspec way
        self._native_kinds = _TextKinds()
        self._native_inputs = _TextInputs()
        self._cols: dict[str, list[np.ndarray]] = {k: [] for k in _COLS}
        self.extra: dict[str, dict[int, Any]] = {
            "blocks_per_sm": {},
            "occupancy": {},
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
        n = len(events)
        # The event's own fields: one C-level pass each (attrgetter + np.fromiter); its args: see _args.
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
        ids = (self._id_col(events, "pid"), self._id_col(events, "tid"))
        self._append(kind, ids, t, _float_col(events, "dur"), self._args(events))

    def _append(
        self, kind: np.ndarray, ids: tuple, t: np.ndarray, d: np.ndarray, args: dict[str, np.ndarray]
    ) -> None:
        """Add n events' columns: kind ids (_Kinds), (pid, tid) codes, ts and dur in µs (nan: absent), the args
        columns (_ARG_COLS); their extras are in self.extra already."""
        c = self._cols
        n = len(kind)
        c["ph"].append(self._kinds.ph_of(kind))
        c["cat"].append(self._kinds.cat_of(kind))
        c["name"].append(self._kinds.name_of(kind))
        c["pid"].append(ids[0])
        c["tid"].append(ids[1])
        c["ts"].append(_us_to_ns(np.where(np.isnan(t), 0.0, t)))
        d = np.where(np.isnan(d), 0.0, d)
        self.negative_durs += int((d < 0).sum())
        c["dur"].append(np.rint(np.clip(d, 0.0, 1e15) * 1000.0).astype(np.int64))
        for key, col in args.items():
            c[key].append(col)
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

    def add_text(self, buf, lo: int, hi: int) -> bool:
        """Add the events of buf[lo:hi] (array elements, no brackets) through the C decoder (trace/_native.c),
        which makes no Python object per event; False when there is none or it leaves the piece to the msgspec
        way (add), which then decodes it: the two make the same table."""
        dec = self._native
        r = dec.decode(buf, lo, hi) if dec is not None else None
        if r is None:
            return False
        p = _Text(*r)
        try:  # the names it saw first here; msgspec takes whatever the C side takes (tests/test_native.py)
            self._native_kinds.add(p.kinds)
        except msgspec.DecodeError:  # were it not so: this builder's pieces go the msgspec way from now on
            self._native = None
            return False
        self._add_text(p)
        if self._native_bytes() > max(NATIVE_FLOOR, self.max_bytes * NATIVE_SHARE):
            self._native = None  # many distinct long names or input types: the msgspec way from here on
            self._native_kinds, self._native_inputs = _TextKinds(), _TextInputs()
        return True

    def _native_bytes(self) -> int:
        """What the C decoder's path holds besides the table: its copies of the distinct (ph, cat, name) triples
        and input-type texts, and their maps here. Not counted in bytes(), so that both paths give the same
        verdict on a trace; bounded instead by handing the rest of the pieces to msgspec past a share of it."""
        if self._native is None:
            return 0
        return int(self._native.nbytes) + self._native_kinds.nbytes + self._native_inputs.nbytes

    def _add_text(self, p: _Text) -> None:
        # The decoder numbered this piece's input-type texts whether or not any event is kept: later ids count them.
        self._native_inputs.add(p.input_texts)
        t = np.frombuffer(p.ts, np.float64)
        if not t.size:  # "[ ]": whitespace only
            return
        local = np.frombuffer(p.kind, np.int32)
        # The events add() drops: a time out of range, or no time, name and category (the same counts).
        bad = np.abs(t) >= MAX_TS_US
        empty = np.isnan(t) & self._native_kinds.blank[local]
        keep = None
        if bad.any() or empty.any():
            self.bad_times += int(bad.sum())
            self.empty += int((empty & ~bad).sum())
            keep = ~(bad | empty)
            if not keep.any():
                return
        col = _Kept(keep)
        ids = self._text_ids(p, col)
        kind = self._native_kinds.table_ids(col(local), self._kinds)
        args = self._text_args(p, col)
        self._text_extras(p, col)
        self._append(kind, ids, col(t), col(np.frombuffer(p.dur, np.float64)), args)

    def _text_ids(self, p: _Text, col: _Kept) -> tuple[np.ndarray, np.ndarray]:
        """pid and tid codes; the strings among them numbered as _id_col numbers them (pids first, event order)."""
        pid, tid = np.frombuffer(p.pid, np.int64), np.frombuffer(p.tid, np.int64)
        if p.strids:
            pid, tid = pid.copy(), tid.copy()
            for which, out in ((0, pid), (1, tid)):
                for code, raw in p.strids:
                    if code & 1 == which and col.has(code >> 1):
                        out[code >> 1] = self._id_codes[_STR(raw)]
        return col(pid), col(tid)

    def _text_args(self, p: _Text, col: _Kept) -> dict[str, np.ndarray]:
        return _arg_cols(
            lambda f: col(np.frombuffer(getattr(p, f), np.int64)),
            lambda f: col(np.frombuffer(getattr(p, f), np.float64)),
        )

    def _text_extras(self, p: _Text, col: _Kept) -> None:
        """The sparse extras, in event order, shared as _extras shares them."""
        n0 = self.n
        brow, bval = col.rows(p.bps_rows, p.bps_vals)
        orow, oval = col.rows(p.occ_rows, p.occ_vals)
        if brow.size or orow.size:
            self._text_occupancy(brow, bval, orow, oval, n0)
        self._text_inputs(p, col, n0)
        x = self.extra
        for row, alloc, reserved, device in p.mem:
            if col.has(row):
                i = n0 + col.at(row)
                x["total_allocated"][i] = _huge_as_inf(_ANY(alloc))
                x["total_reserved"][i] = None if reserved is None else _huge_as_inf(_ANY(reserved))
                x["device_type"][i] = None if device is None else _ANY(device)

    def _text_occupancy(
        self, brow: np.ndarray, bval: np.ndarray, orow: np.ndarray, oval: np.ndarray, n0: int
    ) -> None:
        """Kernel figures (rows and values of each), shared in event order as _occupancy shares them."""
        if np.array_equal(brow, orow):
            rows, b, o = brow, bval.tolist(), oval.tolist()
        else:  # on different events: None where one is not set, as _occupancy
            rows = np.union1d(brow, orow)
            b, o = _spread(rows, brow, bval), _spread(rows, orow, oval)
        self._keep_occupancy((rows + n0).tolist(), list(chain.from_iterable(zip(b, o))))

    def _text_inputs(self, p: _Text, col: _Kept, n0: int) -> None:
        """Input-type lists by the id of their text as _extras numbers them (each text decoded once)."""
        rows, ids = col.rows(p.in_rows, p.in_ids, np.int32)
        if not ids.size:
            return
        ids = self._native_inputs.table_ids(ids, self._inputs)
        has = ids >= 0  # not an empty list
        self._add_inputs(rows[has] + n0, ids[has])

    def _add_inputs(self, rows: np.ndarray, ids: np.ndarray) -> None:
        if rows.size:
            self._in_rows.append(rows.astype(np.int64, copy=False))
            self._in_ids.append(ids.astype(np.int32, copy=False))
            self._in_n += int(rows.size)

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
        saves some), the interned strings, and the sparse extras; the same on both decode paths."""
        strings = self._name_ix.nbytes + self._cat_ix.nbytes + self._id_codes.nbytes + self._kinds.nbytes
        strings += self._inputs.nbytes + self._in_n * IN_ROW_BYTES
        extras = sum(map(len, self.extra.values())) * ENTRY_BYTES
        return self.n * ROW_BYTES + strings + extras

    def _compact(self) -> None:
        """Join the columns of the latest pieces. Piece-sized arrays live on the malloc heap, which keeps their
        pages after they are freed; joined ones are mapped on their own and given back when build() joins them."""
        for k, v in self._cols.items():  # compacted: a table of millions of events waits here until build()
            v[self._big :] = [_compact(k, np.concatenate(v[self._big :]))]
        self._big += 1
        self._pending = 0
        if len(self._in_rows) > self._in_big + 1:  # the input-type rows alike
            for v in (self._in_rows, self._in_ids):
                v[self._in_big :] = [np.concatenate(v[self._in_big :])]
        self._in_big = len(self._in_rows)

    def _id_col(self, events: list, key: str) -> np.ndarray:
        try:
            return np.fromiter(map(_GET[key], events), np.int64, len(events))
        except (TypeError, ValueError, OverflowError):  # strings ("Spans", ""), None, or huge numbers
            return np.fromiter(map(self._id_codes.__getitem__, map(_GET[key], events)), np.int64, len(events))

    def _args(self, events: list) -> dict[str, np.ndarray]:
        """The columns from the events' args, a slice of events at a time (the tuples per field of a 1 MB piece of
        tiny events would take ten times its size); the sparse extras go into self.extra."""
        args = list(map(_GET["args"], events))
        n = len(args)
        step = -(-n // -(-n // _ARGS_AT_ONCE))  # even slices: 4.2k events make 3 of 1.4k, not 2048, 2048, 100
        parts = [self._arg_slice(args[lo : lo + step], lo) for lo in range(0, n, step)]
        return {
            k: np.concatenate([p[k] for p in parts]) if len(parts) > 1 else parts[0][k] for k in _ARG_COLS
        }

    def _arg_slice(self, args: list, lo: int) -> dict[str, np.ndarray]:
        a = _arg_columns(args)
        out = _arg_cols(lambda f: _arg_ids(a[_A[f]]), lambda f: _arg_floats(a[_A[f]]))
        self._extras(a, self.n + lo)
        return out

    def _extras(self, a: list[tuple], n0: int) -> None:
        """a: args as columns (_arg_columns) of the events from index n0 on."""
        n = len(a[0])
        bps, occ = a[_A["blocks_per_sm"]], a[_A["occupancy"]]
        if bps.count(None) < n or occ.count(None) < n:  # a C-level count: most events carry none
            self._occupancy(bps, occ, n0)
        types = a[_A["input_type"]]
        if types.count(None) < n:
            at = list(compress(range(n), types))  # the lists that are not empty
            texts = list(map(_JSON, map(types.__getitem__, at)))
            first = dict.fromkeys(texts)  # this slice's distinct lists, in the order of their first use
            for t in first:
                first[t] = self._inputs.id_of(t)
            ids = list(map(first.__getitem__, texts))
            self._add_inputs(np.array(at, np.int64) + n0, np.array(ids, np.int32))
        allocated = a[_A["total_allocated"]]
        if allocated.count(None) < n:
            x = self.extra
            for i in _present(allocated):
                x["total_allocated"][n0 + i] = _huge_as_inf(allocated[i])
                x["total_reserved"][n0 + i] = _huge_as_inf(a[_A["total_reserved"]][i])
                x["device_type"][n0 + i] = a[_A["device_type"]][i]

    def _occupancy(self, bps: tuple, occ: tuple, n0: int) -> None:
        """Kernel figures, one object per distinct value (kept values then pin no memory of the decoded pieces
        around them). Shared in event order, blocks per SM first: 0.0 and -0.0 are one dict key, so the order
        decides which object is kept."""
        rows = _present(bps)
        same = occ.count(None) == len(occ) - len(rows) and None not in map(occ.__getitem__, rows)
        if not same:  # occupancy on other events than blocks per SM (Kineto writes both on each kernel)
            rows = sorted({*rows, *_present(occ)})
        both = list(chain.from_iterable(zip(map(bps.__getitem__, rows), map(occ.__getitem__, rows))))
        if not {*map(type, both)} <= _FLOAT_OR_NONE:
            both = [v if v is None or type(v) is float else _as_float(v) for v in both]
        self._keep_occupancy([n0 + i for i in rows], both)

    def _keep_occupancy(self, at: list[int], both: list) -> None:
        """Kernel figures of the events at `at`, as (blocks per SM, occupancy) pairs flattened, None where one is
        not set: one object kept per distinct value, in this order."""
        kept = list(map(self._shared.setdefault, both, both))  # (None becomes a key too: harmless)
        for out, vals in ((self.extra["blocks_per_sm"], kept[0::2]), (self.extra["occupancy"], kept[1::2])):
            out.update(compress(zip(at, vals), map(operator.is_not, vals, repeat(None))))

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
            _with_inputs(self.extra, self._input_types()),
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
            if isinstance(d, InputTypes):  # its texts renumbered as this builder first sees them
                ids = np.array([self._inputs.id_of(t) for t in d.texts()], np.int32)
                self._add_inputs(d.rows + self.n, ids[d.ids] if ids.size else d.ids)
                self._in_big = len(self._in_rows)
            else:
                self.extra[key].update({j + self.n: val for j, val in d.items()})
        self.n += n
        self.bad_times += bad_times
        self.negative_durs += negative_durs
        self.empty += empty

    def _input_types(self) -> InputTypes:
        """The input-type lists so far as an InputTypes (one buffer of their distinct texts)."""
        t = self._inputs
        ends = np.frombuffer(t.ends, np.int64).copy()
        return InputTypes(_join(self._in_rows, np.int64), _join(self._in_ids, np.int32), t.data, ends)

    def _remap_str_ids(self, col: np.ndarray, str_ids: list[str]) -> np.ndarray:
        new = np.array([-2 - self._str_ix.setdefault(s, len(self._str_ix)) for s in str_ids], dtype=np.int64)
        local = -2 - col
        is_str = (col <= -2) & (local < len(str_ids))
        return np.where(is_str, new[np.where(is_str, local, 0)], col)

    def build(self) -> EventTable:
        types = self._input_types()
        self._inputs = _InputTexts()
        self._native, self._native_kinds, self._native_inputs = None, _TextKinds(), _TextInputs()
        cols = {}
        for k in list(self._cols):  # each column's pieces dropped once joined: at most one column held twice
            cols[k] = _compact(k, _join(self._cols.pop(k), _COLS[k]))
            trim()  # hand the pieces' heap memory back before the next column is allocated
        self.epoch_base_ns = _rebase_epoch(cols)
        keep = cols.pop("_keep", None)
        extra = _with_inputs(self.extra, types)
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
_ARG_COLS = ("ext", "corr", "py_id", "py_parent", "nbytes")
_ARGS_AT_ONCE = 2048  # events whose args are tuples at once: ~0.6 MB, stays in cache (8192: 2% slower)
ROW_BYTES = sum(np.dtype(t).itemsize for t in _COLS.values())  # one event in every column: 79 bytes
IN_ROW_BYTES = 12  # an event with an input-type list: its index (int64) and the list's id (int32)


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


class _InputTexts:
    """Input-type list as JSON text (msgspec's encoding, one for each list) -> its id, numbered in the order events
    first use them. The texts are kept in one growing buffer and found again through an open-addressing table of
    their hashes: a dict of the texts took ~190 bytes a list besides the text (0.9x the JSON of a trace whose every
    list differs), this takes 24. Held as text, not lists: as lists such a trace took 2.7x its JSON."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.ends = array("q", [0])  # text k is data[ends[k]:ends[k + 1]]
        self._hashes = array("q")
        self._slots = array("i", [-1]) * 8  # an id, or -1; at most half full
        self._mask = 7

    def __len__(self) -> int:
        return len(self._hashes)

    @property
    def nbytes(self) -> int:
        return len(self.data) + 16 * len(self._hashes) + 4 * len(self._slots)

    def id_of(self, text: bytes) -> int:
        h = hash(text)
        i = h & self._mask
        slots, hashes, ends, data = self._slots, self._hashes, self.ends, self.data
        k = slots[i]
        while k >= 0:
            if hashes[k] == h and data[ends[k] : ends[k + 1]] == text:
                return k
            i = (i + 1) & self._mask
            k = slots[i]
        k = slots[i] = len(hashes)
        hashes.append(h)
        data += text
        ends.append(len(data))
        if 2 * len(hashes) > len(slots):
            self._grow()
        return k

    def _grow(self) -> None:
        mask = 2 * len(self._slots) - 1
        slots = array("i", [-1]) * (mask + 1)
        for k, h in enumerate(self._hashes):
            i = h & mask
            while slots[i] >= 0:
                i = (i + 1) & mask
            slots[i] = k
        self._slots, self._mask = slots, mask


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
_KIND = operator.attrgetter("ph", "cat", "name")
_A = {f: i for i, f in enumerate(Args.__struct_fields__)}  # Args field -> its index in _ASTUPLE's tuple
_ASTUPLE = msgspec.structs.astuple
_FLOAT_OR_NONE = {float, type(None)}
_GET = {k: operator.attrgetter(k) for k in ("ph", "cat", "name", "pid", "tid", "ts", "dur", "args")}


def _float_col(events: list, key: str) -> np.ndarray:
    """A float64 column; None (JSON null) becomes nan."""
    try:
        return np.fromiter(map(_GET[key], events), np.float64, len(events))
    except OverflowError:  # an integer of 309+ digits
        return np.fromiter(map(_huge_as_inf, map(_GET[key], events)), np.float64, len(events))


def _huge_as_inf(v):
    """An integer past float range as the float its digits round to (+-inf, as 1e400 decodes), so that it is
    dropped or excluded as out of range like any other; anything else as it is."""
    if type(v) is int and not -(2**1023) < v < 2**1023:
        try:
            return float(v)
        except OverflowError:
            return float("inf") if v > 0 else float("-inf")
    return v


def _arg_columns(args: list) -> list[tuple]:
    """The events' args as one tuple per Args field (index by _A). One astuple per event and a transpose cost
    ~12 ns a field; a getattr pass per field ~40 ns, and then most fields are absent everywhere (count, below)."""
    try:
        return list(zip(*map(_ASTUPLE, args)))
    except TypeError:  # "args": null somewhere
        return list(zip(*map(_ASTUPLE, [a or NO_ARGS for a in args])))


def _present(col: tuple) -> list[int]:
    """Indices of the values that are not None."""
    return list(compress(range(len(col)), map(operator.is_not, col, repeat(None))))


def _arg_ids(col: tuple) -> np.ndarray:
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


def _arg_floats(col: tuple) -> np.ndarray:
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


class InputTypes(Mapping[int, list]):
    """The events' input-type lists (record_shapes), event index -> list, held compactly: the indices of the
    events that have one (sorted), the id of each one's list, and the distinct lists' JSON texts in one buffer
    (texts[ids[k]] is data[ends[id]:ends[id + 1]]). A list is decoded when asked for; the same on both decode
    paths, as the texts are msgspec's encoding of the decoded lists (issue 31: lists of their own per event held
    2.7x the JSON)."""

    def __init__(self, rows: np.ndarray, ids: np.ndarray, data: bytearray, ends: np.ndarray) -> None:
        self.rows, self.ids, self.data, self.ends = rows, ids, data, ends

    def _at(self, rows: np.ndarray) -> np.ndarray:
        """Each row's position in self.rows; -1 where it has no list."""
        pos = np.searchsorted(self.rows, rows)
        inside = pos < self.rows.size
        found = np.zeros(pos.shape, bool)
        found[inside] = self.rows[pos[inside]] == rows[inside]
        return np.where(found, pos, -1)

    def _text(self, k: int) -> bytes:
        return bytes(self.data[int(self.ends[k]) : int(self.ends[k + 1])])

    def __getitem__(self, row: int) -> list:
        at = int(self._at(np.array([row], np.int64))[0])
        if at < 0:
            raise KeyError(row)
        return _ANY(self._text(int(self.ids[at])))

    def __iter__(self) -> Iterator[int]:
        return iter(self.rows.tolist())

    def __len__(self) -> int:
        return int(self.rows.size)

    def lists(self, rows: np.ndarray) -> list:
        """The lists of these events (() where one has none), each distinct one decoded once."""
        at = self._at(np.asarray(rows, np.int64))
        out: list = [()] * at.size
        decoded: dict[int, list] = {}
        for i, a in enumerate(at.tolist()):
            if a >= 0:
                k = int(self.ids[a])
                v = decoded.get(k)
                out[i] = decoded[k] = v if v is not None else _ANY(self._text(k))
        return out

    def texts(self) -> list[bytes]:
        """The distinct texts, by id."""
        return [self._text(k) for k in range(self.ends.size - 1)]

    def kept(self, keep: np.ndarray) -> InputTypes:
        """Those of the events kept (a mask over all events), at their new indices."""
        mine = keep[self.rows]
        return InputTypes((np.cumsum(keep) - 1)[self.rows[mine]], self.ids[mine], self.data, self.ends)


def _as_float(v) -> float:
    if isinstance(v, str):
        return float("inf") if v.strip().lower() == "inf" else float("nan")
    return float(_huge_as_inf(v))


# ---- the C decoder's pieces (TableBuilder.add_text) ----

_STR = msgspec.json.Decoder(str).decode
_ANY = msgspec.json.Decoder().decode
_JSON = msgspec.json.encode
ENV_NATIVE = settings.NATIVE.name  # "0": decode every piece the msgspec way (tests compare the two)


def native_available() -> bool:
    """Whether pieces are decoded by the C decoder here (built, and not turned off by IDLEHOUND_NATIVE=0)."""
    return _native is not None and settings.NATIVE.get()


def _new_decoder() -> Optional[Any]:
    return _native.Decoder() if native_available() else None


class _Text(NamedTuple):
    """What _native.Decoder.decode returns for a piece: per event, float64 / int64 / int32 columns as bytes
    (absent: nan, pid and tid -1, ids NO_ID); the kernel figures where set (rows, values); and the rare fields as
    their JSON text: (2 * row + is_tid, text) for string pids and tids, (row, allocated, reserved, device type)
    for memory totals; input types as the id of their text (in_rows, in_ids)."""

    n: int
    kinds: list  # (ph, cat, name) JSON strings first seen since the last piece, in the order of their ids
    ts: bytes
    dur: bytes
    pid: bytes
    tid: bytes
    external_id: bytes  # the args' columns are named as Args fields (_arg_cols reads them by those names)
    external_id_lc: bytes
    correlation: bytes
    python_id: bytes
    python_parent_id: bytes
    nbytes: bytes
    mem_bytes: bytes
    kind: bytes
    bps_rows: bytes
    bps_vals: bytes
    occ_rows: bytes
    occ_vals: bytes
    input_texts: list  # input-type lists (JSON) first seen since the last piece, in the order of their ids
    in_rows: bytes
    in_ids: bytes
    strids: list
    mem: list


class _Kept:
    """The events of a piece that are kept (keep: a mask, None for all), and where each lands."""

    def __init__(self, keep: Optional[np.ndarray]) -> None:
        self.keep = keep
        self._at = None if keep is None else np.cumsum(keep) - 1

    def __call__(self, col: np.ndarray) -> np.ndarray:
        return col if self.keep is None else col[self.keep]

    def has(self, row: int) -> bool:
        return self.keep is None or bool(self.keep[row])

    def at(self, row: int) -> int:
        return row if self._at is None else int(self._at[row])

    def rows(self, rows: bytes, vals: bytes, dtype: type = np.float64) -> tuple[np.ndarray, np.ndarray]:
        """Sparse values (rows and values as bytes) of the kept events, at the rows they land on."""
        r: np.ndarray = np.frombuffer(rows, np.int64)
        v: np.ndarray = np.frombuffer(vals, dtype)
        if self.keep is None or self._at is None or not r.size:
            return r, v
        kept = self.keep[r]
        return self._at[r[kept]], v[kept]


class _TextKinds:
    """The C decoder's (ph, cat, name) ids -> the builder's _Kinds ids, mapped in the order events first use them
    (as add() interns them; an id first seen on a dropped event is mapped where it is next used)."""

    def __init__(self) -> None:
        self.triples: list[tuple[str, str, str]] = []
        self.blank = np.zeros(0, bool)  # no name and no category
        self.map = np.zeros(0, np.intp)  # -1: not mapped yet
        self.nbytes = 0

    def add(self, raws: list) -> None:
        if not raws:
            return
        new = [(_STR(a), _STR(b), _STR(c)) for a, b, c in raws]
        self.triples += new
        self.blank = np.concatenate([self.blank, np.array([not c and not n for _, c, n in new], bool)])
        self.map = np.concatenate([self.map, np.full(len(new), -1, np.intp)])
        self.nbytes += len(new) * (ENTRY_BYTES + 64)

    def table_ids(self, local: np.ndarray, kinds: _Kinds) -> np.ndarray:
        ids = self.map[local]
        if (ids < 0).any():
            for k in _first_used(local[ids < 0]):
                self.map[k] = kinds[self.triples[k]]
            ids = self.map[local]
        return ids


class _TextInputs:
    """The C decoder's input-type text ids -> the builder's ids (_InputTexts: each text decoded and encoded again
    as _extras encodes the lists, so that both paths number the same lists alike), mapped in the order kept events
    first use them; -2 for an empty list. A text is dropped once mapped."""

    def __init__(self) -> None:
        self.texts: list[Optional[bytes]] = []
        self.map = np.zeros(0, np.int32)  # -1: not mapped yet
        self.nbytes = 0  # the texts not mapped yet, and an entry for each

    def add(self, texts: list) -> None:
        if texts:
            self.texts += texts
            self.map = np.concatenate([self.map, np.full(len(texts), -1, np.int32)])
            self.nbytes += sum(map(len, texts)) + len(texts) * IN_ROW_BYTES

    def table_ids(self, ids: np.ndarray, inputs: _InputTexts) -> np.ndarray:
        if (self.map[ids] == -1).any():
            for k in _first_used(ids[self.map[ids] == -1]):
                text = self.texts[k]
                assert text is not None
                v = _ANY(text)
                self.map[k] = inputs.id_of(_JSON(v)) if v else -2
                self.texts[k] = None
                self.nbytes -= len(text)
        return self.map[ids]


def _first_used(ids: np.ndarray) -> list[int]:
    """The distinct ids in the order of their first use (the order add() makes things for them event by event)."""
    uniq, first = np.unique(ids, return_index=True)
    return uniq[np.argsort(first)].tolist()


def _spread(rows: np.ndarray, at: np.ndarray, vals: np.ndarray) -> list:
    """vals placed at their rows among rows; None elsewhere."""
    out: list = [None] * len(rows)
    for i, v in zip(np.searchsorted(rows, at).tolist(), vals.tolist()):
        out[i] = v
    return out
