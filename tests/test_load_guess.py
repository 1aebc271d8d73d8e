"""The top level found without reading the events array (trace/_kineto._guess_top) gives the same trace as the
full top-level decode, on torch.profiler's layout and on layouts where the guess is wrong or does not fit."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest

from idlehound.trace import _kineto, parse_trace_bytes

from .conftest import TRACES
from .test_decode_reference import _read, assert_same, reference

DEMO = sorted((TRACES / "demo").glob("*.pt.trace.json*"))[0]


def _events() -> list[dict]:
    return json.loads(_first_events())


@functools.cache
def _first_events() -> str:
    """The demo trace's first 400 events as JSON, read once (each case takes a fresh copy)."""
    return json.dumps(json.loads(_read(DEMO))["traceEvents"][:400])


def _full(buf: bytes, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(_kineto, "_guess_top", lambda b: None)
        return parse_trace_bytes(buf, "full.json")


def _same(a, b) -> None:
    ta, tb = a.events, b.events
    assert ta.names == tb.names and ta.cats == tb.cats and ta.str_ids == tb.str_ids
    for k in ("ph", "cat", "name", "pid", "tid", "ts", "dur", "ext", "corr", "py_id", "py_parent"):
        assert np.array_equal(getattr(ta, k), getattr(tb, k)), k
    assert np.array_equal(ta.nbytes, tb.nbytes, equal_nan=True)
    assert ta.extra == tb.extra
    assert a.metadata == b.metadata and a.device_properties == b.device_properties
    assert a.warnings == b.warnings


def test_recorded_trace_takes_the_guess_and_matches_the_full_decode(monkeypatch):
    buf = _read(DEMO)
    assert _kineto._guess_top(buf) is not None  # Kineto's layout: events, then "traceName"
    guessed = parse_trace_bytes(buf, DEMO.name)
    _same(guessed, _full(buf, monkeypatch))
    assert_same(guessed.events, reference(buf))


def _doc(*parts: str) -> bytes:
    return ("{" + ", ".join(parts) + "}").encode()


CASES = {
    # a list after the events: the file's last "]" is not the array's end (the guess fails, the full decode runs)
    "list after events": lambda ev: _doc(
        '"schemaVersion": 1',
        f'"traceEvents": {ev}',
        '"deviceProperties": [{"id": 0, "name": "X", "computeMajor": 9}]',
        '"traceName": "t"',
    ),
    "bracket in trace name": lambda ev: _doc(f'"traceEvents": {ev}', '"traceName": "run]1"'),
    "key twice (the last counts)": lambda ev: _doc(
        f'"traceEvents": {ev}', f'"traceEvents": {json.dumps(_events()[100:300])}'
    ),
    "key text in a string before": lambda ev: _doc(
        '"note": "\\"traceEvents\\": [1]"', f'"traceEvents": {ev}', '"traceName": "t"'
    ),
    "events last, spaces": lambda ev: f'{{ "schemaVersion" : 1 ,\n "traceEvents" :\n {ev} \n}}\n'.encode(),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_other_layouts_give_the_full_decode(case, monkeypatch):
    buf = CASES[case](json.dumps(_events()))
    guessed = parse_trace_bytes(buf, "guess.json")
    _same(guessed, _full(buf, monkeypatch))
    assert_same(guessed.events, reference(buf))


def test_wrong_guess_is_retried_not_reported(monkeypatch):
    buf = CASES["list after events"](json.dumps(_events()))
    assert (
        _kineto._guess_top(buf) is not None
    )  # the guess is taken, wrongly: the events fail to decode as one array
    retried = []
    real = _kineto._decode_top
    monkeypatch.setattr(_kineto, "_decode_top", lambda b, p: retried.append(p) or real(b, p))
    trace = parse_trace_bytes(buf, "guess.json")
    assert retried and trace.device_properties == [{"id": 0, "name": "X", "computeMajor": 9}]
