"""TableBuilder: decoded events, piece by piece, into the compact columns of an EventTable (trace/_events.py).

Two ways in, which make the same table: add() takes msgspec's Event structs (trace/_decode.py), add_text() the
C decoder's columns (trace/_native.c, unpacked in trace/_text.py); the conversions both use are in _columns.py.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from itertools import chain, compress, repeat
from typing import Any, Optional, Union

import msgspec
import numpy as np

from .. import settings
from .._limits import TABLE_RATIO, size_text, trim
from ._columns import (
    _A,
    _ARG_COLS,
    _ARGS_AT_ONCE,
    _COLS,
    _FLOAT_OR_NONE,
    _GET,
    _KIND,
    IN_ROW_BYTES,
    MAX_TS_US,
    ROW_BYTES,
    _arg_cols,
    _arg_columns,
    _arg_floats,
    _arg_ids,
    _as_float,
    _compact,
    _float_col,
    _huge_as_inf,
    _join,
    _keep_extras,
    _pack,
    _present,
    _rebase_epoch,
    _remap,
    _us_to_ns,
    _with_inputs,
)
from ._decode import Args, Event
from ._events import NONE, EventTable, InputTypes, Refused
from ._intern import ENTRY_BYTES, IdValue, _IdCodes, _InputTexts, _Interner, _Kinds
from ._native_columns import NativePiece
from ._text import _ANY, _JSON, _STR, _Kept, _spread, _TextInputs, _TextKinds

try:
    from . import _native  # the C decoder (setup.py builds it); absent where it was not built
except ImportError:  # pragma: no cover - depends on the install
    _native = None  # type: ignore[assignment]

COMPACT_EVERY = 16  # pieces (of about 8k events) between joins of their columns
COMPACT_EVENTS = 2**17  # or events (~10 MB of full-width columns)
NATIVE_SHARE = 1 / 16  # of the table's budget, that the C decoder's copies of distinct names may take ...
NATIVE_FLOOR = 4 * 2**20  # ... or this much


class TableBuilder:
    """Accumulates decoded events batch by batch into compact columns."""

    def __init__(self) -> None:
        self._name_ix = _Interner()
        self._cat_ix = _Interner()
        self._kinds = _Kinds(self._name_ix, self._cat_ix)
        self._str_ix: dict[str, int] = {}
        self._shared: dict[Any, Any] = {}  # float -> the one object kept for it
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

    def add(self, events: Sequence[Event]) -> None:
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
        self,
        kind: np.ndarray,
        ids: tuple[np.ndarray, np.ndarray],
        t: np.ndarray,
        d: np.ndarray,
        args: dict[str, np.ndarray],
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

    def add_text(self, buf: Union[bytes, bytearray, memoryview], lo: int, hi: int) -> bool:
        """Add the events of buf[lo:hi] (array elements, no brackets) through the C decoder (trace/_native.c),
        which makes no Python object per event; False when there is none or it leaves the piece to the msgspec
        way (add), which then decodes it: the two make the same table."""
        dec = self._native
        r = dec.decode(buf, lo, hi) if dec is not None else None
        if r is None:
            return False
        p = NativePiece(*r)
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

    def _add_text(self, p: NativePiece) -> None:
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

    def _text_ids(self, p: NativePiece, col: _Kept) -> tuple[np.ndarray, np.ndarray]:
        """pid and tid codes; the strings among them numbered as _id_col numbers them (pids first, event order)."""
        pid, tid = np.frombuffer(p.pid, np.int64), np.frombuffer(p.tid, np.int64)
        if p.strids:
            pid, tid = pid.copy(), tid.copy()
            for which, out in ((0, pid), (1, tid)):
                for code, raw in p.strids:
                    if code & 1 == which and col.has(code >> 1):
                        out[code >> 1] = self._id_codes[_STR(raw)]
        return col(pid), col(tid)

    def _text_args(self, p: NativePiece, col: _Kept) -> dict[str, np.ndarray]:
        return _arg_cols(
            lambda f: col(np.frombuffer(getattr(p, f), np.int64)),
            lambda f: col(np.frombuffer(getattr(p, f), np.float64)),
        )

    def _text_extras(self, p: NativePiece, col: _Kept) -> None:
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

    def _text_inputs(self, p: NativePiece, col: _Kept, n0: int) -> None:
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

    def _drop_empty(self, events: Sequence[Event], missing: np.ndarray) -> bool:
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

    def _id_col(self, events: Sequence[Event], key: str) -> np.ndarray:
        try:
            return np.fromiter(map(_GET[key], events), np.int64, len(events))
        except (TypeError, ValueError, OverflowError):  # strings ("Spans", ""), None, or huge numbers
            return np.fromiter(map(self._id_codes.__getitem__, map(_GET[key], events)), np.int64, len(events))

    def _args(self, events: Sequence[Event]) -> dict[str, np.ndarray]:
        """The columns from the events' args, a slice of events at a time (the tuples per field of a 1 MB piece of
        tiny events would take ten times its size); the sparse extras go into self.extra."""
        args = list(map(_GET["args"], events))
        n = len(args)
        step = -(-n // -(-n // _ARGS_AT_ONCE))  # even slices: 4.2k events make 3 of 1.4k, not 2048, 2048, 100
        parts = [self._arg_slice(args[lo : lo + step], lo) for lo in range(0, n, step)]
        return {
            k: np.concatenate([p[k] for p in parts]) if len(parts) > 1 else parts[0][k] for k in _ARG_COLS
        }

    def _arg_slice(self, args: list[Optional[Args]], lo: int) -> dict[str, np.ndarray]:
        a = _arg_columns(args)
        out = _arg_cols(lambda f: _arg_ids(a[_A[f]]), lambda f: _arg_floats(a[_A[f]]))
        self._extras(a, self.n + lo)
        return out

    def _extras(self, a: list[tuple[Any, ...]], n0: int) -> None:
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

    def _occupancy(self, bps: tuple[Any, ...], occ: tuple[Any, ...], n0: int) -> None:
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

    def _keep_occupancy(self, at: list[int], both: list[Any]) -> None:
        """Kernel figures of the events at `at`, as (blocks per SM, occupancy) pairs flattened, None where one is
        not set: one object kept per distinct value, in this order."""
        kept = list(map(self._shared.setdefault, both, both))  # (None becomes a key too: harmless)
        for out, vals in ((self.extra["blocks_per_sm"], kept[0::2]), (self.extra["occupancy"], kept[1::2])):
            out.update(compress(zip(at, vals), map(operator.is_not, vals, repeat(None))))

    def _id(self, v: IdValue) -> int:
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

    def parts(self) -> Parts:
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

    def merge(self, parts: Parts) -> None:
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
        out: np.ndarray = np.where(is_str, new[np.where(is_str, local, 0)], col)
        return out

    def build(self) -> EventTable:
        types = self._input_types()
        self._inputs = _InputTexts()
        self._native, self._native_kinds, self._native_inputs = None, _TextKinds(), _TextInputs()
        cols: dict[str, np.ndarray] = {}
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


# What parts() hands merge(): columns, names, categories, string ids, extras, and the counts n, bad_times,
# negative_durs and empty.
Parts = tuple[
    dict[str, np.ndarray], list[str], list[str], list[str], dict[str, Mapping[int, Any]], int, int, int, int
]
ENV_NATIVE = settings.NATIVE.name  # "0": decode every piece the msgspec way (tests compare the two)


def native_available() -> bool:
    """Whether pieces are decoded by the C decoder here (built, and not turned off by IDLEHOUND_NATIVE=0)."""
    return _native is not None and settings.NATIVE.get()


def _new_decoder() -> Optional[_native.Decoder]:
    return _native.Decoder() if native_available() else None
