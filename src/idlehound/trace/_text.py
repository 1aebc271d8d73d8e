"""The C decoder's pieces (trace/_native.c, TableBuilder.add_text; its result is named in _native_columns.py):
which events of a piece are kept, and the maps from its ids of (ph, cat, name) triples and input-type texts to
the builder's."""

from __future__ import annotations

from typing import Any, Optional

import msgspec
import numpy as np

from ._columns import IN_ROW_BYTES
from ._intern import ENTRY_BYTES, _InputTexts, _Kinds

_STR = msgspec.json.Decoder(str).decode
_ANY = msgspec.json.Decoder().decode
_JSON = msgspec.json.encode


class _Kept:
    """The events of a piece that are kept (keep: a mask, None for all), and where each lands."""

    def __init__(self, keep: Optional[np.ndarray]) -> None:
        self.keep = keep
        self._at = None if keep is None else np.cumsum(keep) - 1

    def __call__(self, col: np.ndarray) -> np.ndarray:
        kept: np.ndarray = col if self.keep is None else col[self.keep]
        return kept

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

    def add(self, raws: list[tuple[bytes, bytes, bytes]]) -> None:
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
        out: np.ndarray = ids
        return out


class _TextInputs:
    """The C decoder's input-type text ids -> the builder's ids (_InputTexts: each text decoded and encoded again
    as _extras encodes the lists, so that both paths number the same lists alike), mapped in the order kept events
    first use them; -2 for an empty list. A text is dropped once mapped."""

    def __init__(self) -> None:
        self.texts: list[Optional[bytes]] = []
        self.map = np.zeros(0, np.int32)  # -1: not mapped yet
        self.nbytes = 0  # the texts not mapped yet, and an entry for each

    def add(self, texts: list[bytes]) -> None:
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
        out: np.ndarray = self.map[ids]
        return out


def _first_used(ids: np.ndarray) -> list[int]:
    """The distinct ids in the order of their first use (the order add() makes things for them event by event)."""
    uniq, first = np.unique(ids, return_index=True)
    order: list[int] = uniq[np.argsort(first)].tolist()
    return order


def _spread(rows: np.ndarray, at: np.ndarray, vals: np.ndarray) -> list[Any]:
    """vals placed at their rows among rows; None elsewhere."""
    out: list[Any] = [None] * len(rows)
    for i, v in zip(np.searchsorted(rows, at).tolist(), vals.tolist()):
        out[i] = v
    return out
