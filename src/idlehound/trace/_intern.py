"""Interning for the table builder: names, categories, (ph, cat, name) triples, pid/tid values and input-type
texts, each numbered in the order events first show them."""

from __future__ import annotations

import sys
from array import array
from typing import Callable, Union

import numpy as np

from ._events import NONE, PH_CODES, Refused

ENTRY_BYTES = 100  # a kept per-event extra or a new distinct string: its dict slot, key and value, roughly


class _Interner(dict[str, int]):
    """name -> small int; a new name gets the next number (lookups stay in C for known names)."""

    nbytes = 0  # what the strings and their slots take, roughly

    def __missing__(self, key: str) -> int:
        self.nbytes += sys.getsizeof(key) + ENTRY_BYTES
        v = self[key] = len(self)
        return v


Kind = tuple[str, str, str]  # an event's (ph, cat, name)
_KindArrays = tuple[np.ndarray, np.ndarray, np.ndarray]


class _Kinds(dict[Kind, int]):
    """(ph, cat, name) -> a small int, with that triple's ph code, category id and name id kept in columns
    (names and categories are interned in the order events first show them, as one pass per column would)."""

    def __init__(self, names: _Interner, cats: _Interner) -> None:
        super().__init__()
        self._names, self._cats = names, cats
        self._codes: list[tuple[int, int, int]] = []
        self._arrays: Union[_KindArrays, tuple[()]] = ()
        self.nbytes = 0

    def __missing__(self, key: Kind) -> int:
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

    def _columns(self) -> _KindArrays:
        if not self._arrays:
            ph, cat, name = zip(*self._codes)
            self._arrays = (np.array(ph, np.int8), np.array(cat, np.int16), np.array(name, np.int32))
        return self._arrays

    def ph_of(self, kind: np.ndarray) -> np.ndarray:
        col: np.ndarray = self._columns()[0][kind]
        return col

    def cat_of(self, kind: np.ndarray) -> np.ndarray:
        col: np.ndarray = self._columns()[1][kind]
        return col

    def name_of(self, kind: np.ndarray) -> np.ndarray:
        col: np.ndarray = self._columns()[2][kind]
        return col


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


IdValue = Union[int, str, None]  # a pid or tid as the event has it


class _IdCodes(dict[IdValue, int]):
    """pid/tid value -> its int64 code (code(value); NONE beyond int64)."""

    def __init__(self, code: Callable[[IdValue], int]) -> None:
        super().__init__()
        self._code = code
        self.nbytes = 0

    def __missing__(self, key: IdValue) -> int:
        self.nbytes += sys.getsizeof(key) + ENTRY_BYTES
        v = self._code(key)
        v = self[key] = v if -(2**63) <= v < 2**63 else NONE  # an id beyond int64 is not a real Kineto id
        return v


class _PhCodes(dict[str, int]):
    def __missing__(self, key: str) -> int:
        return 9


_PH = _PhCodes(PH_CODES)
