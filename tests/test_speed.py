"""The fast load path (issue 21): optional gzip bindings, the per-piece depth check, pieces on two processes."""

from __future__ import annotations

import gzip
import importlib
import json
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from idlehound import TraceError, _limits, load_trace
from idlehound.trace import _parallel, parse_trace_bytes

from .conftest import TRACES

BACKENDS = ["zlib"] + [
    m for m in ("zlib_ng.zlib_ng", "isal.isal_zlib") if importlib.util.find_spec(m.split(".")[0])
]


def _reference_depth(b: bytes) -> int:
    depth = top = 0
    inside = escaped = False
    for ch in b:
        if inside:
            if escaped:
                escaped = False
            elif ch == 92:
                escaped = True
            elif ch == 34:
                inside = False
        elif ch == 34:
            inside = True
        elif ch in b"[{":
            depth += 1
            top = max(top, depth)
        elif ch in b"]}":
            depth -= 1
    return top


def _json_text(alphabet: str):
    return st.recursive(
        st.none() | st.integers() | st.text(alphabet=alphabet, max_size=8),
        lambda c: (
            st.lists(c, max_size=4) | st.dictionaries(st.text(alphabet=alphabet, max_size=4), c, max_size=3)
        ),
        max_leaves=30,
    )


@pytest.mark.slow  # seconds of work on its own; CI runs it
@settings(max_examples=300, deadline=None)
@given(st.lists(_json_text('ab"\\[]{},'), max_size=6))
def test_depth_check_matches_a_character_by_character_parse(values):
    data = json.dumps(values).encode()
    assert _parallel.max_depth(data) == _reference_depth(data)


@pytest.mark.slow  # seconds of work on its own; CI runs it
@settings(max_examples=300, deadline=None)
@given(st.lists(_json_text("ab[]{},"), max_size=6))
def test_depth_check_without_escapes_counts_no_bracket_inside_a_string(values):
    data = json.dumps(values).encode()  # no backslash: the fast path, brackets inside strings
    assert _parallel.max_depth(data) == _reference_depth(data)


def _events(n: int, deep: int = 0) -> bytes:
    evs = [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": f"op [{i}] {{",
            "pid": 1,
            "tid": 1,
            "ts": i,
            "dur": 1,
            "args": {"External id": i, "shape": [[1, 2], []]},
        }
        for i in range(n)
    ]
    text = json.dumps({"schemaVersion": 1, "traceEvents": evs}).encode()
    if deep:  # one event far down the array nests `deep` levels inside its args
        at = text.index(b'"shape"', len(text) * 3 // 4)
        text = text[:at] + b'"x": ' + b"[" * deep + b"]" * deep + b", " + text[at:]
    return text


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_nesting_past_the_limit_deep_inside_the_events_is_a_clean_error(jobs, monkeypatch):
    monkeypatch.setattr(_parallel, "PIECE_BYTES", 2048)
    monkeypatch.setattr(_parallel, "PARALLEL_MIN", 0)
    monkeypatch.setenv("IDLEHOUND_JOBS", jobs)
    ok = parse_trace_bytes(_events(300, deep=_limits.MAX_DEPTH - 5), "ok.json")  # 4 levels above the args
    assert len(ok.events) == 300
    with pytest.raises(TraceError, match=f"nested more than {_limits.MAX_DEPTH} levels deep") as e:
        parse_trace_bytes(_events(300, deep=_limits.MAX_DEPTH - 3), "deep.json")
    assert "deep.json" in str(e.value) and "\n" not in str(e.value)


def test_nesting_in_top_level_keys_after_the_events_is_checked_too():
    text = _events(10)[:-1] + b', "x": ' + b"[" * 70 + b"]" * 70 + b"}"
    with pytest.raises(TraceError, match="nested more than 64 levels deep"):
        parse_trace_bytes(text, "t.json")
    assert len(parse_trace_bytes(_events(10)[:-1] + b', "x": [[[]]]}', "t.json").events) == 10


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    mod = importlib.import_module(request.param)
    monkeypatch.setattr(_limits, "_zlib", mod)
    monkeypatch.setattr(_limits, "GZIP_ERRORS", (zlib.error, mod.error))
    return mod


def test_every_gzip_backend_reads_the_same_trace(backend, tmp_path):
    src = next((TRACES / "demo").glob("*.pt.trace.json.gz"))
    plain = tmp_path / "demo.pt.trace.json"
    plain.write_bytes(gzip.decompress(src.read_bytes()))
    a, b = load_trace(src), load_trace(plain)
    assert len(a.events) == len(b.events) > 1000
    assert (a.events.ts == b.events.ts).all() and a.events.names == b.events.names


def test_every_gzip_backend_keeps_the_size_cap_and_names_corrupt_data(backend, tmp_path):
    bomb = tmp_path / "bomb.pt.trace.json.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        f.write(b'{"traceEvents":[' + b" " * 6 * 2**20 + b"]}")
    with pytest.raises(TraceError, match="decompressed trace is over the 4 MiB limit"):
        load_trace(bomb, max_bytes=4 * 2**20)
    bad = tmp_path / "bad.pt.trace.json.gz"
    good = gzip.compress(_events(2000))
    bad.write_bytes(good[:40] + bytes(200) + good[240:])
    with pytest.raises(TraceError, match="corrupt gzip data") as e:
        load_trace(bad)
    assert str(bad) in str(e.value) and "\n" not in str(e.value)


def _last_done_by_loop(idx, launched, done, t0, t1):
    out = []
    for a, b in zip(t0, t1):
        cand = idx[(launched <= a) & (done <= b)]
        out.append(cand[-1] if cand.size else -1)
    return out


@pytest.mark.parametrize("ordered", [True, False])
def test_awaited_op_search_matches_the_plain_loop(ordered):
    from idlehound.analysis._replay import _last_done

    rng = np.random.default_rng(7)
    n = 400
    launched = np.cumsum(rng.integers(0, 50, n)).astype(float)
    launched[:5] = -np.inf  # queued before the window
    done = launched + rng.integers(10, 500, n)
    done = np.maximum.accumulate(done) if ordered else done  # FIFO streams end in order; odd ones may not
    idx = np.sort(rng.choice(10 * n, n, replace=False))
    t0 = np.sort(rng.uniform(-100, launched[-1] + 100, 60))
    t1 = t0 + rng.uniform(0, 2000, 60)
    assert _last_done(idx, launched, done, t0, t1).tolist() == _last_done_by_loop(idx, launched, done, t0, t1)


def test_ranks_at_once_fit_the_free_memory(tmp_path, monkeypatch):
    from idlehound import distributed

    paths = []
    for r, size in enumerate((1000, 3000)):
        p = tmp_path / f"rank-{r}.json.gz"
        p.write_bytes(b"x" * size)
        paths.append(p)
    real = Path.read_text

    def meminfo(self, *a, **k):
        if str(self) == "/proc/meminfo":
            return "MemTotal: 100 kB\nMemAvailable: 300 kB\n"  # 307200 bytes: 5 ranks of 2 x 10 x 3000 bytes
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "read_text", meminfo)
    assert distributed._fit_memory(16, paths) == 5
    assert distributed._fit_memory(3, paths) == 3
    paths[1].write_bytes(b"x" * 10**6)
    assert distributed._fit_memory(16, paths) == 1


def test_small_pages_turns_numpy_huge_pages_off_and_puts_the_setting_back():
    """analyze_path runs in 4 KB pages (docs/measurements/speed-2026-12-04.md); numpy's own setting, process-wide,
    is restored after, also when the analysis raises."""
    from idlehound import _limits

    try:
        from numpy._core.multiarray import _get_madvise_hugepage, _set_madvise_hugepage
    except ImportError:  # numpy < 2
        from numpy.core.multiarray import _get_madvise_hugepage, _set_madvise_hugepage
    was = _get_madvise_hugepage()
    try:
        for setting in (True, False):
            _set_madvise_hugepage(setting)
            with pytest.raises(ValueError), _limits.small_pages():
                assert _get_madvise_hugepage() is False
                raise ValueError
            assert _get_madvise_hugepage() is setting
    finally:
        _set_madvise_hugepage(was)
