"""One list (trace/_native_columns.py) for both sides of the C decoder: the committed header is what the generator
makes of it, and decode()'s tuple, unpacked by name as NativePiece, holds each field where the list says."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from idlehound.trace import _native_columns as spec
from idlehound.trace import _table
from idlehound.trace._decode import NO_ID, Args

ROOT = Path(__file__).resolve().parents[1]


def _generator():  # tools/ is not a package: load the script as a module
    spec_ = importlib.util.spec_from_file_location(
        "gen_native_columns", ROOT / "tools" / "gen_native_columns.py"
    )
    assert spec_ is not None and spec_.loader is not None
    mod = importlib.util.module_from_spec(spec_)
    sys.modules.setdefault("gen_native_columns", mod)
    spec_.loader.exec_module(mod)
    return mod


def test_the_committed_header_is_generated_from_the_list() -> None:
    gen = _generator()
    assert gen.HEADER.read_text() == gen.render(), "run: python tools/gen_native_columns.py"


def test_the_header_names_the_keys_of_the_python_side() -> None:
    text = (ROOT / "src/idlehound/trace/_native_columns.h").read_text()
    for key in Args.__struct_encode_fields__:  # the args keys msgspec decodes are the ones the C side matches
        assert f'"{key}"' in text
    assert "#define NO_ID INT64_MIN" in text and NO_ID == -(2**63)
    assert f"#define MAX_DEPTH {spec.MAX_DEPTH}\n" in text
    f64 = [n for n, t in spec.NativePiece.__annotations__.items() if t is spec.F64]
    assert "enum { " + ", ".join(f"C_{n.upper()}" for n in f64) + ", NF };" in text


PIECE = (
    b'{"ph": "X", "cat": "kernel", "name": "k", "pid": 11, "tid": 12, "ts": 1.5, "dur": 2.5, "args": {'
    b'"External id": 21, "external id": 22, "correlation": 23, "Python id": 24, "Python parent id": 25, '
    b'"bytes": 26, "Bytes": 27, "Total Allocated": 28, "Total Reserved": 29, "Device Type": 1, '
    b'"blocks per SM": 3.5, "est. achieved occupancy %": 45, "Input type": ["float"]}},\n'
    b'{"ph": "i", "cat": "cpu_op", "name": "m", "pid": "main", "tid": 13, "ts": 3}'
)


@pytest.mark.skipif(not _table.native_available(), reason="the C decoder is not built here")
def test_decode_unpacks_by_name() -> None:
    raw = _table._native.Decoder().decode(PIECE, 0, len(PIECE))
    assert raw is not None and len(raw) == len(spec.NativePiece._fields)
    p = spec.NativePiece(*raw)

    def col(b: bytes, dtype: type = np.int64) -> list:
        return np.frombuffer(b, dtype).tolist()

    assert p.n == 2
    assert p.kinds == [(b'"X"', b'"kernel"', b'"k"'), (b'"i"', b'"cpu_op"', b'"m"')]
    assert col(p.kind, np.int32) == [0, 1]
    assert col(p.ts, np.float64) == [1.5, 3.0]
    dur = col(p.dur, np.float64)
    assert dur[0] == 2.5 and math.isnan(dur[1])
    assert col(p.pid) == [11, -1] and p.strids == [(2, b'"main"')]  # a string pid: row 1, pid (not tid)
    assert col(p.tid) == [12, 13]
    for name, value in [
        ("external_id", 21),
        ("external_id_lc", 22),
        ("correlation", 23),
        ("python_id", 24),
        ("python_parent_id", 25),
    ]:
        assert col(getattr(p, name)) == [value, NO_ID], name
    for name, value in [("nbytes", 26.0), ("mem_bytes", 27.0)]:
        got = col(getattr(p, name), np.float64)
        assert got[0] == value and math.isnan(got[1]), name
    assert (col(p.bps_rows), col(p.bps_vals, np.float64)) == ([0], [3.5])
    assert (col(p.occ_rows), col(p.occ_vals, np.float64)) == ([0], [45.0])
    assert p.input_texts == [b'["float"]'] and col(p.in_rows) == [0] and col(p.in_ids, np.int32) == [0]
    assert p.mem == [(0, b"28", b"29", b"1")]
