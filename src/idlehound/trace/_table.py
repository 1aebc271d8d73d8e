"""A columnar table of trace events: numpy arrays and interned names, no per-event objects."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

PH_CODES = {"X": 0, "i": 1, "I": 1, "s": 2, "f": 3, "M": 4, "C": 5, "B": 6, "E": 7}
PH_X, PH_I = 0, 1
NONE = -1  # missing integer argument


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
        self._name_ix: dict[str, int] = {}
        self._cat_ix: dict[str, int] = {}
        self._str_ix: dict[str, int] = {}
        self._cols: dict[str, list[np.ndarray]] = {k: [] for k in _COLS}
        self.extra: dict[str, dict[int, Any]] = {
            "blocks_per_sm": {}, "occupancy": {}, "input_type": {},
            "total_allocated": {}, "total_reserved": {}, "device_type": {},
        }
        self.n = 0
        self.bad_times = 0
        self.negative_durs = 0

    def add(self, events: list) -> None:
        # |ts| beyond ~30 years of microseconds cannot be a real profile (and would overflow ns).
        keep = [e for e in events if e.ts is None or -1e15 < e.ts < 1e15]
        self.bad_times += len(events) - len(keep)
        ni, ci = self._name_ix, self._cat_ix
        c = self._cols
        c["ph"].append(np.array([PH_CODES.get(e.ph, 9) for e in keep], dtype=np.int8))
        c["cat"].append(np.array([ci.setdefault(e.cat, len(ci)) for e in keep], dtype=np.int16))
        c["name"].append(np.array([ni.setdefault(e.name, len(ni)) for e in keep], dtype=np.int32))
        ident = self._id
        c["pid"].append(_ints([e.pid if type(e.pid) is int else ident(e.pid) for e in keep]))
        c["tid"].append(_ints([e.tid if type(e.tid) is int else ident(e.tid) for e in keep]))
        ts = np.array([e.ts if e.ts is not None else 0.0 for e in keep], dtype=np.float64)
        c["ts"].append(np.rint(ts * 1000.0).astype(np.int64))
        dur = np.array([_dur(e.dur) for e in keep], dtype=np.float64)
        self.negative_durs += int((dur < 0).sum())
        c["dur"].append(np.rint(np.clip(dur, 0.0, 1e15) * 1000.0).astype(np.int64))
        args = [e.args for e in keep]
        c["ext"].append(_int_col(args, "external_id"))
        c["corr"].append(_int_col(args, "correlation"))
        c["py_id"].append(_int_col(args, "python_id"))
        c["py_parent"].append(_int_col(args, "python_parent_id"))
        nan = np.nan
        c["nbytes"].append(np.array(
            [nan if a is None else a.nbytes if a.nbytes is not None else a.mem_bytes if a.mem_bytes is not None
             else nan for a in args], dtype=np.float64))
        self._extras(keep, args)
        self.n += len(keep)

    def _extras(self, keep: list, args: list) -> None:
        x = self.extra
        for i, a in enumerate(args):
            if a is None or (a.blocks_per_sm is None and a.occupancy is None and not a.input_type
                             and a.total_allocated is None):
                continue
            j = self.n + i
            if a.blocks_per_sm is not None:
                x["blocks_per_sm"][j] = _as_float(a.blocks_per_sm)
            if a.occupancy is not None:
                x["occupancy"][j] = _as_float(a.occupancy)
            if a.input_type:
                x["input_type"][j] = a.input_type  # a list as recorded; strings compared on use
            if a.total_allocated is not None:
                x["total_allocated"][j] = a.total_allocated
                x["total_reserved"][j] = a.total_reserved
                x["device_type"][j] = a.device_type

    def _id(self, v) -> int:
        if v is None:
            return NONE
        if isinstance(v, str):
            try:
                return int(v)
            except ValueError:
                return -2 - self._str_ix.setdefault(v, len(self._str_ix))
        return v

    def build(self) -> EventTable:
        cols = {k: (np.concatenate(v) if v else np.zeros(0, dtype=_COLS[k])) for k, v in self._cols.items()}
        return EventTable(
            names=list(self._name_ix), cats=list(self._cat_ix), extra=self.extra,
            str_ids=list(self._str_ix), **cols)


_COLS = {
    "ph": np.int8, "cat": np.int16, "name": np.int32, "pid": np.int64, "tid": np.int64,
    "ts": np.int64, "dur": np.int64, "ext": np.int64, "corr": np.int64,
    "py_id": np.int64, "py_parent": np.int64, "nbytes": np.float64,
}


def _dur(d) -> float:
    if d is None or d != d:
        return 0.0
    return float(d)


def _int_col(args: list, attr: str) -> np.ndarray:
    get = operator.attrgetter(attr)
    vals = [NONE if a is None else get(a) for a in args]
    vals = [NONE if v is None else v for v in vals]
    return _ints(vals)


def _ints(vals: list) -> np.ndarray:
    try:
        return np.array(vals, dtype=np.int64)
    except OverflowError:  # an id beyond int64 is not a real Kineto id: treat it as missing
        return np.array([v if -(2**63) <= v < 2**63 else NONE for v in vals], dtype=np.int64)


def _as_float(v) -> float:
    if isinstance(v, str):
        return float("inf") if v.strip().lower() == "inf" else float("nan")
    return float(v)
