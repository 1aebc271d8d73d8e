"""The C decoder (trace/_native.c) against the msgspec path: the same trace, table and warnings, or the same
one-line error, on every recorded trace, on mutated ones and on hand-made edge cases; and it really takes the
pieces of real traces (a decoder that declined everything would pass the comparisons)."""

from __future__ import annotations

import contextlib
import functools
import json
import pickle
import random

import numpy as np
import pytest

from idlehound.errors import TraceError
from idlehound.trace import _parallel, _table, parse_trace_bytes

from . import fuzzing
from .test_decode_reference import FILES, _read

pytestmark = pytest.mark.skipif(not _table.native_available(), reason="the C decoder is not built here")


def _outcome(buf: bytes, native: bool, monkeypatch) -> tuple:
    monkeypatch.setenv(_table.ENV_NATIVE, "1" if native else "0")
    try:
        trace = parse_trace_bytes(buf, "t.json")
    except TraceError as e:
        return ("error", str(e))
    t = trace.events
    return ("trace", pickle.dumps(t), trace.warnings, trace.metadata, len(t))


def _taken(buf: bytes, monkeypatch) -> tuple[int, int]:
    """(pieces the C decoder took, pieces it left) in one process."""
    monkeypatch.setenv(_table.ENV_NATIVE, "1")
    monkeypatch.setenv("IDLEHOUND_JOBS", "1")
    seen: list[bool] = []
    add_text = _table.TableBuilder.add_text

    def spy(self, *a):
        seen.append(add_text(self, *a))
        return seen[-1]

    monkeypatch.setattr(_table.TableBuilder, "add_text", spy)
    with contextlib.suppress(TraceError):
        parse_trace_bytes(buf, "t.json")
    monkeypatch.setattr(_table.TableBuilder, "add_text", add_text)
    return seen.count(True), seen.count(False)


def assert_same(buf: bytes, monkeypatch) -> tuple:
    fast, plain = _outcome(buf, True, monkeypatch), _outcome(buf, False, monkeypatch)
    if fast != plain and fast[0] == plain[0] == "trace":
        a, b = pickle.loads(fast[1]), pickle.loads(plain[1])
        for k in vars(b):
            va, vb = getattr(a, k), getattr(b, k)
            same = (
                np.array_equal(va, vb, equal_nan=va.dtype.kind == "f")
                if isinstance(vb, np.ndarray)
                else va == vb
            )
            assert same, (k, va, vb)
        assert fast[2:] == plain[2:]
    assert fast == plain
    return fast


def _every_trace_twice() -> list:
    """Each recorded trace in 1 MiB pieces and in 3,000-byte pieces; the 3,000-byte pass over the traces of more
    than 2 MB (two thirds of the bytes, seconds each) runs with the slow set."""
    out = []
    for path in FILES:
        with path.open("rb") as f:  # a gzip file ends with its decompressed size (mod 4 GiB)
            gz = f.read(2) == b"\x1f\x8b"
            size = int.from_bytes((f.seek(-4, 2), f.read(4))[1], "little") if gz else path.stat().st_size
        big = size > 2 * 10**6
        for pieces in (2**20, 3000):
            marks = [pytest.mark.slow] if big and pieces == 3000 else []
            out.append(
                pytest.param(path, pieces, marks=marks, id=f"{path.parent.name}/{path.name[:30]}-{pieces}")
            )
    return out


@pytest.mark.parametrize("path,pieces", _every_trace_twice())
def test_same_table_on_every_recorded_trace(path, pieces, monkeypatch):
    monkeypatch.setattr(_parallel, "PIECE_BYTES", pieces)
    monkeypatch.setenv("IDLEHOUND_JOBS", "1")
    buf = _read(path)
    assert assert_same(buf, monkeypatch)[0] == "trace"
    taken, left = _taken(buf, monkeypatch)
    assert taken >= 1 and left == 0, (taken, left)  # Kineto's own output: every piece


@pytest.mark.slow  # a pool of two processes, 8 traces: seconds
def test_same_table_on_two_processes(monkeypatch):
    monkeypatch.setattr(_parallel, "PIECE_BYTES", 4096)
    monkeypatch.setattr(_parallel, "PARALLEL_MIN", 0)
    monkeypatch.setenv("IDLEHOUND_JOBS", "2")
    for path in FILES[::5]:
        assert assert_same(_read(path), monkeypatch)[0] == "trace"


def _doc(events: list, **top) -> bytes:
    return json.dumps({"schemaVersion": 1, "traceEvents": events, **top}).encode()


def _ev(i: int = 0, **kw) -> dict:
    e = {
        "ph": "X",
        "cat": "cpu_op",
        "name": f"aten::op{i % 5}",
        "pid": 1,
        "tid": 2,
        "ts": 10.5 + i,
        "dur": 2.25,
    }
    e.update(kw)
    return e


def _texts() -> list[tuple[str, bytes]]:
    """Hand-made traces: each event text is placed among plain events, so its piece is one the C decoder
    either takes or leaves whole."""
    plain = [json.dumps(_ev(i, args={"External id": i})) for i in range(40)]
    odd = {
        "numbers": [
            '"ts": 0.1',
            '"ts": 1e2',
            '"ts": 1E+2',
            '"ts": 12.5e-3',
            '"ts": -0.0',
            '"ts": -0',
            '"ts": 123456789012345678',
            '"ts": 1234567890123456789',
            '"ts": 1.7e15',
            '"ts": 8.99e15',
            '"ts": 9e15',
            '"ts": 1e-400',
            '"ts": 1e400',
            '"ts": 0.30000000000000004',
            '"ts": 2.2250738585072014e-308',
            '"ts": 1.00000000000000011102230246251565404236316680908203125',
            '"ts": 9007199254740993.0',
            '"ts": 123456.7890123456789',
            '"ts": 00.5',
            '"ts": 1.',
            '"ts": .5',
            '"ts": -',
            '"ts": 1e',
            '"ts": true',
            '"ts": "1"',
            '"ts": null',
            '"dur": -3',
            '"dur": 1e20',
            '"dur": null',
        ],
        "strings": [
            '"name": "a\\u00e9\\n\\"q\\"\\/"',
            '"name": "\\ud83d\\ude00"',
            '"name": "\\ud83d"',
            '"name": "\xc3\xa9"',
            '"name": "\xff"',
            '"name": "\xed\xa0\x80"',
            '"name": "tab\there"',
            '"name": "\\x"',
            '"name": null',
            '"name": 3',
            '"name": "' + "k" * 20000 + '"',
            '"cat": ""',
            '"ph": "Z"',
            '"ph": "i", "s": "t"',
            '"na\\u006de": "x"',
        ],
        "ids": [
            '"pid": "Spans"',
            '"tid": "7"',
            '"tid": " 12 "',
            '"pid": null',
            '"pid": 1.0',
            '"pid": 9223372036854775807',
            '"pid": 18446744073709551615',
            '"tid": -5',
            '"pid": ""',
            '"tid": "PyTorch Profiler"',
        ],
        "args": [
            '"args": null',
            '"args": []',
            '"args": {"External id": null}',
            '"args": {"External id": 4611686018427387904}',
            '"args": {"External id": 1, "External id": 2}',
            '"args": {"external id": 9, "correlation": 3}',
            '"args": {"External id": 1.5}',
            '"args": {"Python id": -7, "Python parent id": 2}',
            '"args": {"bytes": 1024, "Bytes": 7}',
            '"args": {"Bytes": -4096.5}',
            '"args": {"bytes": "1"}',
            '"args": {"blocks per SM": 0.5, "est. achieved occupancy %": 100}',
            '"args": {"blocks per SM": -0.0, "est. achieved occupancy %": 0}',
            '"args": {"blocks per SM": 2}',
            '"args": {"est. achieved occupancy %": 50}',
            '"args": {"blocks per SM": "inf"}',
            '"args": {"blocks per SM": null, "est. achieved occupancy %": 3}',
            '"args": {"Input type": ["float", "", "ScalarType"]}',
            '"args": {"Input type": []}',
            '"args": {"Input type": [["float"], "int"]}',
            '"args": {"Input type": [1, 1.0, true]}',
            '"args": {"Input type": "float"}',
            '"args": {"Input type": null}',
            '"args": {"Total Allocated": 1024, "Total Reserved": 2048.0, "Device Type": 1}',
            '"args": {"Total Allocated": 1.5e3}',
            '"args": {"Total Allocated": null, "Total Reserved": 1}',
            '"args": {"Device Type": 1.0, "Total Allocated": 1}',
            '"args": {"Total Allocated": 1, "Device Type": null}',
            '"args": {"Input Dims": [[1, 2], [3]], "Concrete Inputs": ["", "1"], "nested": {"a": [{"b": [1]}]}}',
            '"args": {"a": [1,]}',
            '"args": {"a" 1}',
            '"args": {"a": 1,}',
            '"args": {1: 2}',
            '"args": {"Ext\\u0065rnal id": 5}',
        ],
    }
    cases = []
    for group, fields in odd.items():
        for k, f in enumerate(fields):
            base = json.dumps(_ev(100 + k))[:-1]
            text = base + ", " + f + "}"
            cases.append((f"{group}:{f}", _wrap(plain, text)))
    # Dropped events whose (ph, cat, name) is first seen there: interned where next used, as add() does.
    drop = [
        json.dumps(_ev(0, name="late", ts=9e15)),
        json.dumps({"ph": "X"}),
        json.dumps(_ev(1, name="late")),
    ]
    drop += [
        json.dumps(_ev(2, pid="Ghost", ts=-9e15)),
        json.dumps({"tid": "Ghost"}),
        json.dumps(_ev(3, pid="Real")),
    ]
    cases.append(("dropped first", _wrap(plain, *drop)))
    cases.append(("all dropped", _wrap([], json.dumps({}), json.dumps({"ph": "M"}), *plain[:1])))
    cases += _all_dropped_pieces(plain)
    deep = json.dumps(_ev(5))[:-1] + ', "args": {"x": ' + "[" * 59 + "]" * 59 + "}}"
    deeper = json.dumps(_ev(5))[:-1] + ', "args": {"x": ' + "[" * 60 + "]" * 60 + "}}"
    cases += [("depth 63", _wrap(plain, deep)), ("depth 64", _wrap(plain, deeper))]
    cases.append(("spaces", _wrap(plain, ' \n\t{ "ph" : "X" ,\r\n "ts" : 1 , "name":"s" } ')))
    cases.append(("not an object", _wrap(plain, "[1, 2]")))
    cases.append(("a number", _wrap(plain, "3")))
    return cases


def _all_dropped_pieces(plain: list[str]) -> list[tuple[str, bytes]]:
    """Pieces (of 2 KB, as test_same_outcome_on_edge_cases cuts them) whose every event is dropped, with
    input-type lists the decoder numbers all the same, before and between pieces of kept events that use other
    lists (and the same ones): a kept event must get its own list, never one of a dropped piece."""

    def typed(k: int, **kw) -> str:
        return json.dumps(_ev(k, args={"Input type": ["float", f"dropped{k}"], "External id": k}, **kw))

    out_of_range = [typed(k, ts=9e15) for k in range(60)]
    empty = [json.dumps({"ph": "X", "args": {"Input type": ["float", f"empty{k}"]}}) for k in range(60)]
    kept = [json.dumps(_ev(k, args={"Input type": ["c10::Half", f"kept{k % 7}"]})) for k in range(60)]
    again = [typed(k) for k in range(60)]  # the dropped events' lists, now on kept events
    return [
        ("all dropped: ts out of range, then kept", _wrap([], *out_of_range, *kept)),
        ("all dropped: no ts, name or cat, then kept", _wrap([], *empty, *kept)),
        ("all dropped between kept pieces", _wrap([], *kept, *out_of_range, *again, *empty, *kept)),
        ("all dropped at the end", _wrap(plain, *kept, *empty)),
    ]


def _wrap(plain: list[str], *texts: str) -> bytes:
    body = ",\n".join(plain[:20] + list(texts) + plain[20:])
    return ('{"schemaVersion": 1, "traceEvents": [' + body + "]}").encode("utf-8", "surrogateescape")


@pytest.mark.parametrize("label,buf", _texts(), ids=[c[0][:60] for c in _texts()])
def test_same_outcome_on_edge_cases(label, buf, monkeypatch):
    monkeypatch.setattr(_parallel, "PIECE_BYTES", 2048)
    monkeypatch.setenv("IDLEHOUND_JOBS", "1")
    assert_same(buf, monkeypatch)


def test_floats_are_read_exactly_as_msgspec_reads_them(monkeypatch):
    """Random doubles written every way (shortest, 17 digits, many digits, exponents) and random decimals."""
    rng = random.Random(5)
    texts = []
    for _ in range(3000):
        x = rng.choice(
            [
                rng.uniform(0, 2e6),
                rng.uniform(-1, 1),
                rng.expovariate(1e-9),
                rng.random() * 10 ** rng.randint(-30, 14),
            ]
        )
        texts += [repr(x), f"{x:.17g}", f"{x:.25f}", f"{x:.12e}"]
        texts.append(f"{rng.randint(0, 10**12)}.{rng.randint(0, 10 ** rng.randint(1, 20))}")
    events = [f'{{"ph":"X","cat":"kernel","name":"k","pid":1,"tid":7,"ts":{t},"dur":{t}}}' for t in texts]
    buf = ('{"traceEvents": [' + ",".join(events) + "]}").encode()
    monkeypatch.setenv("IDLEHOUND_JOBS", "1")
    assert assert_same(buf, monkeypatch)[0] == "trace"
    assert _taken(buf, monkeypatch)[1] == 0


def test_numbers_parse_to_the_very_double_msgspec_gives():
    """Bit for bit, before any rounding to ns (the table compare above would hide an error of an ulp)."""
    import msgspec

    from idlehound.trace import _native

    rng = random.Random(7)
    texts = []
    for _ in range(20000):
        e = rng.randint(-40, 40)
        x = rng.random() * 10.0**e
        texts += [
            repr(x),
            f"{x:.17g}",
            f"{x:.15g}",
            f"{x:.20e}",
            f"{x:.30f}",
            str(rng.randint(-(10**18) + 1, 10**18 - 1)),
        ]
        texts.append(
            f"{rng.randint(0, 10**9)}.{rng.randint(0, 10 ** rng.randint(1, 25))}e{rng.randint(-30, 30)}"
        )
    body = ",".join(
        f'{{"name": "a kernel of some length", "ts": {t}}}' for t in texts
    ).encode()  # (>= 40 bytes)
    r = _native.Decoder().decode(body, 0, len(body))
    assert r is not None
    got = np.frombuffer(r[2], np.float64)
    want = np.array([float(v) for v in msgspec.json.decode(b"[" + ",".join(texts).encode() + b"]")])
    bad = np.flatnonzero(got.view(np.int64) != want.view(np.int64))
    assert not bad.size, [(texts[i], got[i], want[i]) for i in bad[:5]]


@functools.cache
def _sources() -> list:
    """The recorded run folders cut to one step, read once for the four seeds (mutate() copies what it changes)."""
    return fuzzing.load_sources(max_steps=1)


# one seed (25 mutants) in the fast set; the other three, seconds each, with the slow set
@pytest.mark.parametrize("seed", [0, *(pytest.param(s, marks=pytest.mark.slow) for s in (1, 2, 3))])
def test_same_outcome_on_mutated_recorded_traces(seed, monkeypatch):
    """tests/fuzzing.py's mutations (odd types, huge numbers, NaN literals, nesting, dropped fields) of the
    recorded run folders, in small pieces so that taken and left pieces mix."""
    monkeypatch.setattr(_parallel, "PIECE_BYTES", 8192)
    monkeypatch.setenv("IDLEHOUND_JOBS", "1")
    rng = random.Random(seed)
    sources = _sources()
    for _ in range(25):
        case = fuzzing.mutate(rng.choice(sources), rng)
        assert_same(fuzzing.encode(case.trace), monkeypatch)


def _mutants(seed: int, n: int) -> list[bytes]:
    """Pieces of real events with bytes flipped, dropped, doubled or replaced by JSON's special characters."""
    rng = random.Random(seed)
    doc = json.loads(_read(FILES[0]))
    events = [json.dumps(e, ensure_ascii=rng.random() < 0.5) for e in doc["traceEvents"][:400]]
    out = []
    for _ in range(n):
        k = rng.randrange(len(events) - 4)
        b = bytearray(",".join(events[k : k + 4]).encode())
        fuzzing.flip_bytes(b, rng)
        out.append(bytes(b))
    return out


def test_a_piece_it_takes_is_one_msgspec_takes_with_the_same_table(monkeypatch):
    """The C decoder is at least as strict as msgspec: on mutated pieces, whatever it takes msgspec decodes to the
    same events, and the two paths give the same outcome for the whole trace."""
    from idlehound.trace import _decode, _native

    taken = 0
    monkeypatch.setenv("IDLEHOUND_JOBS", "1")
    for piece in _mutants(11, 600):
        if _native.Decoder().decode(piece, 0, len(piece)) is not None:
            taken += 1
            _decode.decode_batch(b"[" + piece + b"]")  # raises if msgspec would not take it
        assert_same(b'{"traceEvents": [' + piece + b"]}", monkeypatch)
    assert 30 < taken < 570  # both kinds of piece were tried


def test_pieces_of_tiny_events_are_left_to_msgspec():
    """`{}` repeated would cost 132 bytes of columns an event until the piece is done; msgspec drops them at once
    (tests/unit/test_empty_events.py holds the memory)."""
    from idlehound.trace import _native

    tiny = b",".join([b"{}"] * 5000)
    assert _native.Decoder().decode(tiny, 0, len(tiny)) is None
    real = b",".join([json.dumps(_ev(i)).encode() for i in range(5000)])
    assert _native.Decoder().decode(real, 0, len(real))[0] == 5000


@pytest.mark.parametrize("inside", [" ", "\n\t \r\n", " " * 5000])
def test_an_events_array_of_whitespace_is_the_same_clear_error(inside, monkeypatch):
    monkeypatch.setenv("IDLEHOUND_JOBS", "1")
    buf = b'{"schemaVersion": 1, "traceEvents": [' + inside.encode() + b"]}"
    assert assert_same(buf, monkeypatch) == (
        "error",
        "t.json: 'traceEvents' is empty: the profiler recorded nothing",
    )


@pytest.mark.parametrize(
    "field", ["ts", "dur", "bytes", "Bytes", "blocks per SM", "est. achieved occupancy %"]
)
def test_integers_past_float_range_give_the_same_table_on_both_paths(field, monkeypatch):
    """An integer of 309+ digits (no float holds it) reads as the float 1e400 reads as: out of range."""
    monkeypatch.setenv("IDLEHOUND_JOBS", "1")
    plain = [json.dumps(_ev(i, args={"External id": i})) for i in range(40)]
    huge = "9" * 400
    for sign in ("", "-"):
        text = json.dumps(_ev(100))[:-1]
        text += (
            f', "{field}": {sign}{huge}}}'
            if field in ("ts", "dur")
            else f', "args": {{"{field}": {sign}{huge}}}}}'
        )
        assert assert_same(_wrap(plain, text), monkeypatch)[0] == "trace"


@pytest.mark.parametrize("shape", ["names", "inputs"])
def test_many_distinct_names_or_input_types_get_the_same_verdict_on_both_paths(shape, monkeypatch):
    """The C decoder's own copies of distinct names are not the table's: a trace the msgspec path loads within
    the budget, the C path loads too (issue 31: it was refused, its buffers' capacity counted). Distinct
    input-type lists on every event load too (issue 31: held as lists, they were refused past 2x)."""
    from idlehound import _limits

    monkeypatch.setattr(_limits, "TABLE_FLOOR", 0)  # the budget is then 2x the events' JSON, small or not
    monkeypatch.setattr(_parallel, "PIECE_BYTES", 2**16)
    monkeypatch.setenv("IDLEHOUND_JOBS", "1")
    if shape == "names":
        events = [_ev(i, name=f"{i:06d}" + "n" * 15_000) for i in range(200)]
    else:
        events = [_ev(i, args={"Input type": ["float", "c10::Half", f"T{i}"]}) for i in range(20_000)]
    out = assert_same(_doc(events), monkeypatch)  # one verdict (and table) for both paths
    # The names take about the JSON's size; the lists, held as text, less (as lists of their own: ~3x, refused).
    assert out[0] == "trace" and out[-1] == len(events), out[:1]
    if shape == "inputs":
        table = pickle.loads(out[1])
        assert table.extra["input_type"][7] == ["float", "c10::Half", "T7"]
        assert table.input_types(np.array([19_999, 20_000])) == [["float", "c10::Half", "T19999"], ()]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_input_types_follow_their_events_when_others_are_dropped(jobs, monkeypatch):
    """Events on the other clock (epoch µs among relative times) are dropped at build(); the lists held as text
    (InputTypes) move with the events they belong to, on one process or merged from two."""
    monkeypatch.setattr(_parallel, "PIECE_BYTES", 2048)
    monkeypatch.setattr(_parallel, "PARALLEL_MIN", 0)
    monkeypatch.setenv("IDLEHOUND_JOBS", jobs)
    events = [
        _ev(i, ts=1.7e15 + i if i % 5 == 0 else 10.0 + i, args={"Input type": ["float", f"t{i % 7}"]})
        for i in range(300)
    ]
    out = assert_same(_doc(events), monkeypatch)
    table = pickle.loads(out[1])
    kept = [i for i in range(300) if i % 5]
    assert len(table) == len(kept)
    assert [table.extra["input_type"][j] for j in range(len(kept))] == [["float", f"t{i % 7}"] for i in kept]
    assert table.input_types(np.arange(len(kept) + 1))[-1] == ()
