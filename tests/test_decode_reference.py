"""The fast loader (typed msgspec pieces, columns by np.fromiter, pieces on several processes) against a slow,
plain reference decode with json.loads, column by column, on every recorded trace."""

from __future__ import annotations

import gzip
import json
import math
import os
import shutil
import sys
import sysconfig
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from idlehound.trace import _parallel, _table, parse_trace_bytes
from idlehound.trace._events import PH_CODES

from .conftest import SHARED, TRACES

FILES = sorted(TRACES.glob("*/*.pt.trace.json*")) + sorted(SHARED.glob("*.pt.trace.json*"))
ID_ARGS = {
    "ext": ("External id", "external id"),
    "corr": ("correlation",),
    "py_id": ("Python id",),
    "py_parent": ("Python parent id",),
}


def _read(path: Path) -> bytes:
    raw = path.read_bytes()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _ns(us) -> int:
    """µs as parsed (a float or int) -> whole ns, computed exactly in decimal."""
    return int((Decimal(us) * 1000).to_integral_value())


def _id(a: dict, keys: tuple) -> int:
    for k in keys:
        if _is_int(a.get(k)):
            return a[k] if abs(a[k]) < 2**62 else -1
    return -1


def reference(buf: bytes) -> list[dict]:
    """Each event as the table should hold it, in file order, after dropping the events it cannot place."""
    rows = []
    for e in json.loads(buf)["traceEvents"]:
        a = e.get("args") or {}
        ts = e.get("ts")
        nbytes = a.get("bytes", a.get("Bytes"))
        rows.append(
            {
                "ph": PH_CODES.get(e.get("ph"), 9),
                "cat": e.get("cat", ""),
                "name": e.get("name", ""),
                "pid": e.get("pid"),
                "tid": e.get("tid"),
                "ts": 0 if ts is None else _ns(ts),
                "dur": _ns(min(max(e.get("dur") or 0, 0), 1e15)),
                **{k: _id(a, keys) for k, keys in ID_ARGS.items()},
                "nbytes": float(nbytes) if isinstance(nbytes, (int, float)) else math.nan,
                "extras": {
                    k: a.get(key)
                    for k, key in (
                        ("blocks_per_sm", "blocks per SM"),
                        ("occupancy", "est. achieved occupancy %"),
                        ("input_type", "Input type"),
                        ("total_allocated", "Total Allocated"),
                    )
                    if a.get(key) not in (None, [])
                },
            }
        )
    return _rebase(rows)


def _rebase(rows: list[dict]) -> list[dict]:
    """Absolute epoch times (>= 1e18 ns) counted from the first of them, when most timed events have them;
    metadata events then read 0."""
    timed = [r for r in rows if r["ph"] != PH_CODES["M"]]
    epoch = [r for r in timed if r["ts"] >= 10**18]
    if len(epoch) * 2 <= len(timed):
        return [r for r in rows if not (r["ph"] != PH_CODES["M"] and r["ts"] >= 10**18)]
    base = min(r["ts"] for r in epoch)
    kept = [r for r in rows if r["ph"] == PH_CODES["M"] or r["ts"] >= 10**18]
    for r in kept:
        r["ts"] = r["ts"] - base if r["ph"] != PH_CODES["M"] else 0
    return kept


def _pid(v, str_ids: list[str]):
    """A table pid/tid code back to what the file said."""
    return str_ids[-2 - v] if v <= -2 and -2 - v < len(str_ids) else v


def _expected_pid(v):
    if v is None:
        return -1
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            return v
    return v


def assert_same(table, rows: list[dict]) -> None:
    assert len(table) == len(rows)
    for col in ("ph", "ts", "dur", *ID_ARGS):
        want = np.array([r[col] for r in rows], dtype=np.int64)
        bad = np.flatnonzero(getattr(table, col) != want)
        assert bad.size == 0, (
            f"{col}: event {bad[:1]} is {getattr(table, col)[bad[:1]]}, reference {want[bad[:1]]}"
        )
    assert [table.cats[i] for i in table.cat] == [r["cat"] for r in rows]
    assert [table.names[i] for i in table.name] == [r["name"] for r in rows]
    for col in ("pid", "tid"):
        assert [_pid(int(v), table.str_ids) for v in getattr(table, col)] == [
            _expected_pid(r[col]) for r in rows
        ]
    np.testing.assert_array_equal(table.nbytes, np.array([r["nbytes"] for r in rows]))
    got = {k: table.extra[k] for k in ("blocks_per_sm", "occupancy", "input_type", "total_allocated")}
    for k, d in got.items():
        want = {i: r["extras"][k] for i, r in enumerate(rows) if k in r["extras"]}
        assert set(d) == set(want), k
        for i, v in want.items():
            if k in ("blocks_per_sm", "occupancy") and isinstance(v, str):
                assert d[i] == (math.inf if v.strip().lower() == "inf" else d[i]), (k, i)
            else:
                assert d[i] == v, (k, i)


@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name + "/" + p.name[:30])
def test_fast_decode_matches_reference(path):
    buf = _read(path)
    assert_same(parse_trace_bytes(buf, path).events, reference(buf))


@pytest.mark.slow
@pytest.mark.parametrize("path", FILES[::3], ids=lambda p: p.parent.name + "/" + p.name[:30])
def test_pieces_on_two_processes_match_reference(path, monkeypatch):
    """Tiny pieces and ranges (a few KB) so every file is cut in many places and split across a worker."""
    monkeypatch.setattr(_parallel, "PIECE_BYTES", 4096)
    monkeypatch.setattr(_parallel, "PARALLEL_MIN", 0)
    monkeypatch.setenv("IDLEHOUND_JOBS", "2")
    buf = _read(path)
    assert_same(parse_trace_bytes(buf, path).events, reference(buf))


def _tricky_trace() -> bytes:
    """Names and nested args full of the cut pattern `, {`, so cuts land inside strings and inside args."""
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}}]
    for i in range(400):
        events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "op, {x}, {" * (i % 7),
                "pid": 1,
                "tid": 2,
                "ts": 10.5 + i,
                "dur": 0.25,
                "args": {
                    "External id": i,
                    "Input type": ["float"] * (i % 3),
                    "nested": [{"a": 1}, {"b": [{"c": 2}]}] * 20,
                },
            }
        )
    return json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=1).encode()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_false_cuts_fall_back_to_the_plain_path(jobs, monkeypatch):
    monkeypatch.setattr(_parallel, "PIECE_BYTES", 512)
    monkeypatch.setattr(_parallel, "PARALLEL_MIN", 0)
    monkeypatch.setenv("IDLEHOUND_JOBS", jobs)
    buf = _tricky_trace()
    assert len(_parallel.cuts(memoryview(buf), 1, len(buf), 512)) > 10
    assert_same(parse_trace_bytes(buf).events, reference(buf))


def test_odd_typed_event_in_a_piece_costs_that_event_only(monkeypatch):
    events = json.loads(_tricky_trace())["traceEvents"]
    events[200]["ts"] = "soon"
    buf = json.dumps({"traceEvents": events}).encode()
    monkeypatch.setattr(_parallel, "PIECE_BYTES", 2048)
    monkeypatch.setattr(_parallel, "PARALLEL_MIN", 0)
    monkeypatch.setenv("IDLEHOUND_JOBS", "2")
    trace = parse_trace_bytes(buf)
    del events[200]
    assert trace.warnings == ["skipped 1 malformed event(s)"]
    assert_same(trace.events, reference(json.dumps({"traceEvents": events}).encode()))


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_unknown_phase_or_category_decodes_with_plain_strings(jobs, monkeypatch):
    """Known phases and categories decode to shared strings; a piece with another one (here from the middle
    on) is decoded again with plain strings, and so are the pieces after it: the same table either way."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": f"op{i % 9}", "pid": 1, "tid": 2, "ts": i, "dur": 1, "args": {}}
        for i in range(400)
    ]
    events[150]["cat"] = "npu_runtime"
    events[250]["ph"] = "Z"
    buf = json.dumps({"traceEvents": events}).encode()
    monkeypatch.setattr(_parallel, "PIECE_BYTES", 2048)
    monkeypatch.setattr(_parallel, "PARALLEL_MIN", 0)
    monkeypatch.setenv("IDLEHOUND_JOBS", jobs)
    monkeypatch.setenv(_table.ENV_NATIVE, "0")  # the msgspec path's own mechanism (the C decoder has none)
    calls: list[bool] = []
    decode = _parallel._decode.decode_batch
    monkeypatch.setattr(
        _parallel._decode, "decode_batch", lambda b, known=False: calls.append(known) or decode(b, known)
    )
    trace = parse_trace_bytes(buf)
    assert_same(trace.events, reference(buf))
    assert trace.events.cats[trace.events.cat[150]] == "npu_runtime"
    if jobs == "1":  # (a worker's calls are its own)
        assert calls.count(True) > 1 and calls.count(False) > 1 and calls[-1] is False


def test_no_piece_workers_while_other_threads_run(monkeypatch):
    """A trace loaded inside a threaded process (training) is decoded in that process: fork would copy held locks."""
    import threading

    monkeypatch.setattr(_parallel, "PARALLEL_MIN", 0)
    monkeypatch.setenv("IDLEHOUND_JOBS", "2")
    forked = []

    def no_fork(*args):
        forked.append(1)
        raise _parallel.BadCut  # read by the plain path instead

    monkeypatch.setattr(_parallel, "_fill_parallel", no_fork)
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        buf = _tricky_trace()
        assert_same(parse_trace_bytes(buf).events, reference(buf))
    finally:
        stop.set()
        t.join()
    assert not forked
    parse_trace_bytes(_tricky_trace())
    assert forked  # with the thread gone, the same call would use workers


def test_native_decoder_is_built_where_a_compiler_is():
    """pip builds it (setup.py) wherever there is a C compiler and Python's headers; CI has both."""
    cc = shutil.which("cc") or shutil.which("gcc")
    headers = sysconfig.get_paths()["include"]
    if cc and sys.platform.startswith("linux") and os.path.exists(os.path.join(headers, "Python.h")):
        assert _table._native is not None
