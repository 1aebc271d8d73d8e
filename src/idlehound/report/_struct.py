"""The base of every document Struct and the one rounding helper (report/model.py assembles the documents)."""

from __future__ import annotations

from typing import Optional, overload

import msgspec

# Precision, applied once where a document is built (docs/json-schema.md, "Rounding").
MS = 3  # milliseconds, counts per step, GiB, MB
PCT = 2  # metric values, percentages of a step, bandwidths, gaps per step
SHARE = 4  # finding gains and shares, per-rank figures


@overload
def rnd(x: float, nd: int = MS) -> float: ...
@overload
def rnd(x: None, nd: int = MS) -> None: ...
@overload
def rnd(x: Optional[float], nd: int = MS) -> Optional[float]: ...
def rnd(x: Optional[float], nd: int = MS) -> Optional[float]:
    """The one rounding helper: None stays None, anything else becomes a float with nd decimals."""
    return None if x is None else round(float(x), nd)


class _Doc(msgspec.Struct, forbid_unknown_fields=True):
    """Base of every document part: an unknown key is an error when a document is read back (validation)."""
