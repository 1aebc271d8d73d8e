"""The table of a trace's events that the analysis reads: numpy columns and interned names, no per-event objects."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

import msgspec
import numpy as np

_ANY = msgspec.json.Decoder().decode

PH_CODES = {"X": 0, "i": 1, "I": 1, "s": 2, "f": 3, "M": 4, "C": 5, "B": 6, "E": 7}
PH_X, PH_M = 0, 4  # complete events and metadata (PH_CODES)
NONE = -1  # missing integer argument


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
        end: np.ndarray = self.ts + self.dur
        return end

    def cat_id(self, cat: str) -> int:
        try:
            return self.cats.index(cat)
        except ValueError:
            return -99

    def mask_cat(self, *cats: str, ph: int = PH_X) -> np.ndarray:
        ids = [self.cat_id(c) for c in cats]
        mask: np.ndarray = np.isin(self.cat, ids) & (self.ph == ph)
        return mask

    def name_ids(self, predicate: Callable[..., object]) -> np.ndarray:  # called with each name
        """Ids of the interned names for which predicate(name) is true."""
        return np.fromiter((i for i, n in enumerate(self.names) if predicate(n)), dtype=np.int64)

    def mask_names(self, predicate: Callable[..., object]) -> np.ndarray:
        return np.isin(self.name, self.name_ids(predicate))

    def name_of(self, i: int) -> str:
        return self.names[int(self.name[i])]

    def input_types(self, rows: np.ndarray) -> list[Any]:
        """The input-type lists of these events (() where one has none), each distinct one decoded once."""
        t = self.extra.get("input_type", {})
        if isinstance(t, InputTypes):
            return t.lists(rows)
        return [t.get(r, ()) for r in np.asarray(rows).tolist()]


class InputTypes(Mapping[int, list[Any]]):
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

    def __getitem__(self, row: int) -> list[Any]:
        at = int(self._at(np.array([row], np.int64))[0])
        if at < 0:
            raise KeyError(row)
        types: list[Any] = _ANY(self._text(int(self.ids[at])))
        return types

    def __iter__(self) -> Iterator[int]:
        return iter(self.rows.tolist())

    def __len__(self) -> int:
        return int(self.rows.size)

    def lists(self, rows: np.ndarray) -> list[Any]:
        """The lists of these events (() where one has none), each distinct one decoded once."""
        at = self._at(np.asarray(rows, np.int64))
        out: list[Any] = [()] * at.size
        decoded: dict[int, list[Any]] = {}
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
