"""What the C decoder (trace/_native.c) hands back for a piece, and its constants: the one list both sides use.

`NativePiece` names decode()'s tuple, field by field in its order; the type of each field says how the C side
makes it (F64: a float64 column, I64: an int64 column, Buf: one of its buffers, ...). tools/gen_native_columns.py
writes trace/_native_columns.h from this module: the column enums and their values for an absent field, the
event and args keys (those of trace/_decode.Event and Args), Py_BuildValue's format and arguments, and the limits.
To add or reorder a field: edit NativePiece, run `python tools/gen_native_columns.py`, fill the field in
_native.c, commit the header with it (tests/test_native_columns.py fails while the two disagree).
"""

# No `from __future__ import annotations`: the generator reads the NewTypes of NativePiece's annotations.
from typing import NamedTuple, NewType, Optional

from .._limits import MAX_DEPTH as _TOP_DEPTH
from ._decode import NO_ID, Args, Event

MAX_NAME = 16384  # longer names are left to msgspec: kept here too, they would be held twice
MIN_EVENT_BYTES = 40  # a piece whose events average fewer bytes is left to msgspec (parse_piece)
MAX_DEPTH = (
    _TOP_DEPTH - 1
)  # deepest bracket in a piece, its own array's counted (the top-level object: 1 more)
EVENT_KEYS = Event.__struct_encode_fields__  # an event's members the decoder reads ("ph", "cat", ...)
ARG_FIELDS = (
    Args.__struct_fields__
)  # its args' members: enum A_<FIELD>, JSON keys Args.__struct_encode_fields__
ABSENT_ID = {"pid": -1, "tid": -1}  # an I64 column's value where the event lacks the field; others: NO_ID

Count = NewType("Count", int)  # the piece's events (the Piece's row)
F64 = NewType("F64", bytes)  # a float64 per event (Piece.f[C_<NAME>]); absent: nan
I64 = NewType("I64", bytes)  # an int64 per event (Piece.i[C_<NAME>]); absent: NO_ID, or ABSENT_ID's
Buf = NewType("Buf", bytes)  # the Piece's buffer of that name (s-><name>)
Kinds = NewType("Kinds", list[tuple[bytes, bytes, bytes]])  # the C local of that name: new (ph, cat, name)
Texts = NewType("Texts", list[bytes])  # the C local of that name: new input-type texts
StrIds = NewType("StrIds", list[tuple[int, bytes]])  # the Piece's list of that name
MemRows = NewType("MemRows", list[tuple[int, bytes, Optional[bytes], Optional[bytes]]])  # likewise


class NativePiece(NamedTuple):
    """One piece's events as decode() returns them: per event, float64 / int64 / int32 columns as bytes (absent:
    nan, pid and tid -1, ids NO_ID); the kernel figures where set (rows, values); and the rare fields as their
    JSON text: (2 * row + is_tid, text) for string pids and tids, (row, allocated, reserved, device type) for
    memory totals; input types as the id of their text (in_rows, in_ids). The args' columns are named as Args
    fields (_columns._arg_cols reads them by those names; the C decoder puts an args key in the column of its
    field's name)."""

    n: Count
    kinds: Kinds  # (ph, cat, name) JSON strings first seen since the last piece, in the order of their ids
    ts: F64
    dur: F64
    pid: I64
    tid: I64
    external_id: I64
    external_id_lc: I64
    correlation: I64
    python_id: I64
    python_parent_id: I64
    nbytes: F64
    mem_bytes: F64
    kind: Buf  # int32 ids of the events' (ph, cat, name) triples
    bps_rows: Buf
    bps_vals: Buf
    occ_rows: Buf
    occ_vals: Buf
    input_texts: Texts  # input-type lists (JSON) first seen since the last piece, in the order of their ids
    in_rows: Buf
    in_ids: Buf
    strids: StrIds
    mem: MemRows


__all__ = [
    "ABSENT_ID",
    "ARG_FIELDS",
    "EVENT_KEYS",
    "MAX_DEPTH",
    "MAX_NAME",
    "MIN_EVENT_BYTES",
    "NO_ID",
    "NativePiece",
]
