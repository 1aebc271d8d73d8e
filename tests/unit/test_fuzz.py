"""Malformed input of every kind gives a TraceError (or a valid analysis), never another exception."""

import gzip
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from idlehound import TraceError, analyze, diagnose
from idlehound.report._data import build, check_document, to_json
from idlehound.trace import parse_trace_bytes

from ..conftest import shared

pytestmark = pytest.mark.slow  # hypothesis fuzzing of the loader

_SAMPLE = None


def sample() -> bytes:
    global _SAMPLE
    if _SAMPLE is None:
        _SAMPLE = gzip.decompress(shared("h200_torch211_sync.pt.trace.json.gz").read_bytes())
    return _SAMPLE


def _run(data: bytes) -> None:
    try:
        a = analyze(parse_trace_bytes(data, "fuzz.json"))
    except TraceError as e:
        assert "\n" not in str(e) and str(e).startswith("fuzz.json: ")
        return
    doc = build(a, diagnose(a))
    assert check_document(doc) == []
    json.loads(to_json(doc))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)

event = st.fixed_dictionaries(
    {},
    optional={
        "ph": st.sampled_from(["X", "i", "s", "f", "M", "B", 5]),
        "cat": st.sampled_from(
            ["cpu_op", "kernel", "gpu_memcpy", "cuda_runtime", "user_annotation", "python_function", 3]
        ),
        "name": st.sampled_from(["ProfilerStep#1", "aten::mm", "cudaStreamSynchronize", "[memory]", 7]),
        "pid": json_values,
        "tid": json_values,
        "ts": json_values,
        "dur": json_values,
        "args": json_values,
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(event, max_size=30),
    st.dictionaries(st.sampled_from(["deviceProperties", "baseTimeNanoseconds", "with_stack"]), json_values),
)
def test_random_events(events, top):
    _run(json.dumps({"traceEvents": events, **top}, allow_nan=True).encode())


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=0, max_value=10_000_000))
def test_truncated_real_trace(cut):
    data = sample()
    _run(data[: cut % len(data)])


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes(data):
    _run(data)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=10_000_000), st.binary(min_size=1, max_size=4))
def test_corrupted_real_trace(pos, junk):
    data = bytearray(sample())
    i = pos % len(data)
    data[i : i + len(junk)] = junk
    _run(bytes(data))
