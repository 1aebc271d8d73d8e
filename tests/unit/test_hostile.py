"""Hostile traces and run folders: size and nesting limits, impossible figures, wrong types in run files."""

import gzip
import json
import random
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from idlehound import SettingError, TraceError, _limits, analyze, diagnose, load_trace
from idlehound.cli import main
from idlehound.pipeline import analyze_path
from idlehound.report._data import build, check_document, to_json
from idlehound.trace import _parallel, parse_trace_bytes

from ..conftest import TRACES
from .tracebuilder import TraceBuilder


def _doc(tb: TraceBuilder, **top) -> dict:
    a = analyze(parse_trace_bytes(tb.to_bytes(**top), "built.json"))
    return build(a, diagnose(a))


def _cli_json(path: Path) -> dict:
    """`idlehound analyze PATH --json` run in this process (as tests/test_api.py does): exit 0 and its document."""
    r = CliRunner().invoke(main, ["analyze", str(path), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _steps_with_kernel(tb: TraceBuilder, n: int = 2) -> TraceBuilder:
    for i in range(n):
        tb.step(i, ts=i * 1000, dur=1000)
        tb.kernel("gemm", ts=i * 1000 + 100, dur=500, launch_ts=i * 1000 + 10)
    return tb


# --- size limit and bounded decompression -------------------------------------------------------------------


def _bomb(path: Path, mb: int) -> Path:
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(b'{"traceEvents":[')
        for _ in range(mb):
            f.write(b" " * 2**20)
        f.write(b"]}")
    return path


def test_gzip_bomb_stops_at_the_limit_from_the_api_and_the_environment(tmp_path, monkeypatch):
    bomb = _bomb(tmp_path / "bomb.pt.trace.json.gz", 8)
    assert bomb.stat().st_size < 100_000
    with pytest.raises(TraceError, match="decompressed trace is over the 4 MiB limit") as e:
        load_trace(bomb, max_bytes=4 * 2**20)
    assert str(bomb) in str(e.value) and "IDLEHOUND_MAX_TRACE_BYTES" in str(e.value)
    monkeypatch.setenv("IDLEHOUND_MAX_TRACE_BYTES", str(2**20))
    with pytest.raises(TraceError, match="over the 1 MiB limit"):
        load_trace(bomb)
    monkeypatch.setenv("IDLEHOUND_MAX_TRACE_BYTES", "lots")
    with pytest.raises(SettingError, match="IDLEHOUND_MAX_TRACE_BYTES: must be a positive number"):
        load_trace(bomb)


def test_plain_file_over_the_limit_is_refused_before_reading(tmp_path):
    p = tmp_path / "big.pt.trace.json"
    p.write_bytes(_steps_with_kernel(TraceBuilder()).to_bytes())
    with pytest.raises(TraceError, match=r"the file \(.*\) is over the 100 bytes limit"):
        load_trace(p, max_bytes=100)
    assert len(load_trace(p, max_bytes=p.stat().st_size).events) > 0


def test_multi_member_and_truncated_gzip(tmp_path):
    data = _steps_with_kernel(TraceBuilder()).to_bytes()
    half = len(data) // 2
    p = tmp_path / "two.pt.trace.json.gz"
    p.write_bytes(gzip.compress(data[:half]) + gzip.compress(data[half:]) + b"\0" * 16)
    assert len(load_trace(p).events) == len(parse_trace_bytes(data).events)
    p.write_bytes(gzip.compress(data)[:-30])
    with pytest.raises(TraceError, match="truncated gzip file"):
        load_trace(p)


def test_a_gzip_trace_just_over_a_read_piece_is_read_whole(tmp_path):
    # The gunzipped bytes go to a temporary file that is then mapped: a last piece still in the file object's
    # buffer (here the 680 bytes past 1 MiB, like a 1,049,256-byte torchrun trace) was cut off, and the trace
    # refused as "invalid or truncated JSON".
    head, tail = b'{"traceEvents":[', b'{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":1}]}'
    pad = b'{"ph":"i","name":"m","pid":1,"tid":1,"ts":0,"s":"t"},'
    n = (2**20 + 680 - len(head) - len(tail)) // len(pad)
    data = head + pad * n + b" " * (2**20 + 680 - len(head) - len(tail) - n * len(pad)) + tail
    assert len(data) == 2**20 + 680
    p = tmp_path / "over.pt.trace.json.gz"
    p.write_bytes(gzip.compress(data))
    assert len(load_trace(p).events) == len(parse_trace_bytes(data).events)


# --- nesting, and the scanner that cuts the events into slices -------------------------------------------------


@pytest.mark.slow  # starts an `idlehound analyze` process each
@pytest.mark.parametrize("where", ["event", "top"])
def test_json_nested_1000_deep_is_a_clean_error(tmp_path, run_cli, where):
    deep = b"[" * 1000 + b"]" * 1000
    ev = b'{"ph":"X","cat":"cpu_op","name":"a","ts":1,"dur":1,"args":{"x":' + (
        deep if where == "event" else b"1"
    )
    data = b'{"traceEvents":[' + ev + b'}}], "x":' + (deep if where == "top" else b"1") + b"}"
    p = tmp_path / "deep.pt.trace.json"
    p.write_bytes(data)
    r = run_cli("analyze", p)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "nested more than 64 levels deep" in r.stderr and str(p) in r.stderr


def _reference(b: bytes) -> int:
    depth = mx = 0
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
            mx = max(mx, depth)
        elif ch in b"]}":
            depth -= 1
    return mx


json_text = st.recursive(
    st.none() | st.integers() | st.text(alphabet='ab"\\[]{},', max_size=8),
    lambda c: (
        st.lists(c, max_size=4) | st.dictionaries(st.text(alphabet='k"\\[{', max_size=4), c, max_size=3)
    ),
    max_leaves=25,
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(json_text, max_size=6), st.integers(1, 9))
def test_scanner_matches_a_character_by_character_parse(values, piece):
    data = json.dumps(values).encode()
    old = _limits._SCAN_BYTES
    _limits._SCAN_BYTES = piece  # tiny pieces: every carry across pieces is exercised
    try:
        s = _limits.scan(data, Path("x"), max_depth=10**6)
    finally:
        _limits._SCAN_BYTES = old
    assert s.max_depth == _reference(data)


def test_large_event_arrays_are_decoded_in_slices_with_the_same_result(monkeypatch):
    tb = _steps_with_kernel(TraceBuilder(), n=30)
    whole = parse_trace_bytes(tb.to_bytes())
    monkeypatch.setattr(_parallel, "PIECE_BYTES", 500)
    monkeypatch.setattr(_parallel, "SMALL_PIECE", 500)
    sliced = parse_trace_bytes(tb.to_bytes())
    mv = memoryview(tb.to_bytes())
    assert len(list(_parallel._pieces(mv, 0, len(mv)))) > 10
    assert whole.events.names == sliced.events.names
    assert (whole.events.ts == sliced.events.ts).all() and (whole.events.dur == sliced.events.dur).all()


# --- impossible figures: excluded with a note, or an error -----------------------------------------------------


def test_step_number_of_thousands_of_digits_is_ignored_with_a_note(tmp_path):
    tb = _steps_with_kernel(TraceBuilder())
    tb.step(0, ts=5000, dur=10)
    tb.events[-2]["name"] = "ProfilerStep#" + "9" * 5000
    doc = _doc(tb)
    assert doc["trace"]["steps"] == [0, 1]
    assert any("more than 18 digits" in n for n in doc["notes"])
    p = tmp_path / "digits.pt.trace.json"
    p.write_bytes(tb.to_bytes())
    assert _cli_json(p)["trace"]["steps"] == [0, 1]


def test_an_event_lasting_58_days_is_excluded_not_reported_as_a_58_day_step():
    tb = _steps_with_kernel(TraceBuilder(), n=3)
    tb.events[0]["dur"] = 58 * 86400 * 1e6  # ProfilerStep#0
    tb.kernel("gemm", ts=2100, dur=58 * 86400 * 1e6, launch_ts=2020)
    doc = _doc(tb)
    assert check_document(doc) == []
    assert doc["trace"]["steps"] == [1, 2]  # step 0 is left with no duration and excluded
    assert any("more than a day" in n for n in doc["notes"]) and any(
        "zero duration" in n for n in doc["notes"]
    )
    assert doc["metrics"]["step_ms"]["value"] == 1.0  # the other steps, as recorded


def test_only_zero_length_steps_is_an_error_not_100_percent_idle():
    tb = TraceBuilder()
    tb.step(1, ts=100, dur=0)
    tb.kernel("gemm", ts=100, dur=0, launch_ts=100, launch_dur=0)
    with pytest.raises(TraceError, match="no step with a duration above zero"):
        analyze(parse_trace_bytes(tb.to_bytes(), "zero.json"))


def test_tiny_steps_are_not_written_as_0_00_of_0_00_ms():
    tb = TraceBuilder()
    for i in range(2):
        tb.step(i, ts=i * 2, dur=2)
        tb.kernel("gemm", ts=i * 2 + 1, dur=0.5, launch_ts=i * 2)
    doc = _doc(tb)
    assert "0.00 of 0.00" not in doc["headline"] and "0.002" in doc["headline"], doc["headline"]
    assert check_document(doc) == []


def test_occupancy_copy_sizes_and_memory_out_of_range_are_excluded_with_notes():
    tb = _steps_with_kernel(TraceBuilder())
    tb.kernel("gemm", ts=1700, dur=100, launch_ts=1600, occ=6.9e10)
    tb.memcpy("HtoD (Pageable -> Device)", ts=1850, dur=10, nbytes=10**30, launch_ts=1800)
    tb.memcpy("HtoD (Pageable -> Device)", ts=1900, dur=10, nbytes=4096, launch_ts=1880)
    tb.events.append(
        {
            "ph": "i",
            "cat": "cpu_instant_event",
            "name": "[memory]",
            "pid": 100,
            "tid": 1,
            "ts": 1500,
            "s": "t",
            "args": {"Device Type": 1, "Total Allocated": -5, "Total Reserved": 2**62, "Bytes": 5},
        }
    )
    doc = _doc(tb)
    assert check_document(doc) == []
    notes = " ".join(doc["notes"])
    assert (
        "occupancy of 1 kernel" in notes and "byte counts of 1 copy" in notes and "1 memory sample" in notes
    )
    assert doc["metrics"]["occupancy"]["value"] == 50.0
    assert doc["copies"][0]["bandwidth_gbps"] < 1000


def test_check_document_flags_impossible_figures():
    doc = _doc(_steps_with_kernel(TraceBuilder()))
    assert check_document(doc) == []
    doc["metrics"]["sm_efficiency"]["value"] = 6.9e12
    doc["steps"][0]["duration_ms"] = 58 * 86400e3
    doc["breakdown_ms"]["Kernel"] = -3.0
    doc["kernels"]["p50_us"] = float("inf")
    assert len(check_document(doc)) == 1  # non-finite values are reported alone, first
    doc["kernels"]["p50_us"] = 1.0
    problems = " ".join(check_document(doc))
    assert "metrics.sm_efficiency" in problems and "steps[0].duration_ms" in problems
    assert "breakdown_ms.Kernel" in problems


def test_report_document_is_strict_json_even_when_a_figure_is_not_finite(monkeypatch):
    from idlehound.report import _data

    tb = _steps_with_kernel(TraceBuilder())
    a = analyze(parse_trace_bytes(tb.to_bytes(), "built.json"))
    a.kernels.p90_us = float("nan")
    doc = build(a, diagnose(a))
    assert doc["kernels"]["p90_us"] is None
    assert any("not finite" in n and "kernels.p90_us" in n for n in doc["notes"])
    json.loads(to_json(doc))
    with pytest.raises(ValueError):
        _data.to_json({"x": float("inf")})


@pytest.mark.slow
@pytest.mark.parametrize("run", sorted(p.name for p in TRACES.iterdir() if p.is_dir()))
def test_every_recorded_run_passes_check_document(run):
    res = analyze_path(TRACES / run)
    assert check_document(res.doc) == []
    json.loads(to_json(res.doc))


# --- wrong types in run.json, samples.json and the sidecar -----------------------------------------------------


def _copy_run(tmp_path: Path, name: str = "healthy") -> Path:
    dst = tmp_path / name
    shutil.copytree(TRACES / name, dst)
    return dst


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("profiler_overhead", "1.4", "'profiler_overhead' must be a number, not string"),
        ("sampler", [1], "'sampler' must be an object, not list"),
        (
            "sampler",
            {"mean_util": None, "window_mean_util": 1e300},
            "'sampler.window_mean_util' = 1e+300 is out of range",
        ),
        ("dataloader", {"num_workers": "4"}, "'dataloader.num_workers' must be an integer, not string"),
        ("cudnn_benchmark", 0, "'cudnn_benchmark' must be true or false, not integer"),
        ("steps_seen", 10**30, "'steps_seen' = <integer of 31 digits> is out of range"),
        ("environment", ["x"], "'environment' must be an object, not list"),
        ("environment", {"cpu_count": "8"}, "'environment.cpu_count' must be an integer, not string"),
    ],
)
def test_wrong_types_in_run_json_name_the_file_and_field(tmp_path, field, value, message):
    d = _copy_run(tmp_path)
    info = json.loads((d / "run.json").read_text())
    info[field] = value
    (d / "run.json").write_text(json.dumps(info))
    with pytest.raises(TraceError, match=re.escape(message)) as e:
        analyze_path(d)
    assert str(d / "run.json") in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    "text,message",
    [
        ('{"profiler_overhead": NaN}', "not valid JSON"),
        ('{"x": ' + "9" * 5000 + "}", "not valid JSON"),
        ("[1, 2]", "the top level is a list"),
        ('{"x": ' + "[" * 200 + "]" * 200 + "}", "nested more than 64 levels"),
    ],
)
def test_run_json_that_is_not_json_or_not_an_object(tmp_path, text, message):
    d = _copy_run(tmp_path)
    (d / "run.json").write_text(text)
    with pytest.raises(TraceError, match=message):
        analyze_path(d)


@pytest.mark.slow
def test_wrong_samples_rows_name_the_row_and_bad_sidecar_rows_are_skipped(tmp_path, run_cli):
    d = _copy_run(tmp_path)
    s = json.loads((d / "samples.json").read_text())
    s["samples"][3] = [0.3, "busy", 618.3]
    (d / "samples.json").write_text(json.dumps(s))
    r = run_cli("analyze", d)
    assert r.returncode == 2 and "samples[3] must be [seconds, utilisation %, memory MiB]" in r.stderr
    assert r.stderr.count("\n") == 1
    shutil.copy(TRACES / "healthy" / "samples.json", d / "samples.json")
    side = next(d.glob("*.sidecar.json.gz"))
    doc = json.loads(gzip.decompress(side.read_bytes()))
    doc["frames"][2][3] = "15"
    side.write_bytes(gzip.compress(json.dumps(doc).encode()))
    r = run_cli("analyze", "--json", d)
    assert r.returncode == 0, r.stderr  # the sidecar only refines the trace: a bad row is skipped, not fatal
    json.loads(r.stdout)


@pytest.mark.slow
def test_over_long_path_is_a_clean_error(run_cli, tmp_path):
    r = run_cli("analyze", tmp_path / ("x" * 5000) / "t.pt.trace.json")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "internal error" not in r.stderr


# --- the fuzz harness, bounded: mutated recorded run folders ----------------------------------------------------


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32))
def test_mutated_recorded_runs_give_a_clean_error_or_sane_figures(tmp_path_factory, seed):
    from ..fuzzing import mutate, run_case

    rng = random.Random(seed)
    case = mutate(rng.choice(_small_sources()), rng)
    out = run_case(case.write(tmp_path_factory.mktemp("case")))
    assert out.kind in ("error", "analysed"), (case.ops, out.message)
    assert out.problems == [], (case.ops, out.problems)
    assert out.invalid_json == "", (case.ops, out.invalid_json)


_SOURCES: list = []


def _small_sources() -> list:
    from ..fuzzing import load_sources

    if not _SOURCES:
        _SOURCES.extend(load_sources(["healthy", "fp32_math", "pageable", "memory_churn", "sync_item"]))
    return _SOURCES


# --- memory: the loader holds the table, not the JSON as well ---------------------------------------------------

_PEAK = r"""
import sys
from idlehound.trace import load_trace
def status(key):
    return next(int(x.split()[1]) * 1024 for x in open("/proc/self/status") if x.startswith(key))
base = status("VmRSS:")
open("/proc/self/clear_refs", "w").write("5")
t = load_trace(sys.argv[1])
print(len(t.events), base, status("VmHWM:"))
"""


@pytest.mark.slow
@pytest.mark.skipif(
    not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc to read peak memory"
)
@pytest.mark.parametrize("gz", [False, True])
def test_loading_many_tiny_events_peaks_below_twice_the_json(tmp_path, gz):
    import os
    import subprocess
    import sys

    n = 600_000  # about 43 MB: large enough that fixed costs (imports, buffers of a few MB) do not dominate
    events = ",".join(
        f'{{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":{i},"dur":1}}' for i in range(n)
    )
    data = ('{"traceEvents":[' + events + "]}").encode()
    p = tmp_path / ("tiny.pt.trace.json" + (".gz" if gz else ""))
    p.write_bytes(gzip.compress(data, 1) if gz else data)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", _PEAK, str(p)], capture_output=True, text=True, env=env, check=True
    )
    count, base, peak = map(int, out.stdout.split())
    assert count == n
    assert (peak - base) / len(data) < 2.0, (peak - base) / len(data)


def test_a_kernel_running_far_past_its_step_counts_only_inside_it():
    tb = _steps_with_kernel(TraceBuilder())
    tb.kernel(
        "gemm", ts=1700, dur=1e9, launch_ts=-500, bps=4.0
    )  # launched before the steps: does not extend one
    doc = _doc(tb)
    assert check_document(doc) == []
    assert doc["metrics"]["sm_efficiency"]["value"] <= 100
    assert doc["kernels"]["max_us"] <= 1000.0


def test_implausible_device_memory_is_left_unknown():
    doc = _doc(
        _steps_with_kernel(TraceBuilder()), deviceProperties=[{"id": 0, "name": "x", "totalGlobalMem": 1}]
    )
    assert doc["device"]["memory_bytes"] is None and check_document(doc) == []


def test_sidecar_file_name_too_long_for_the_file_system(tmp_path):
    d = _copy_run(tmp_path, "sync_item")  # a run with a located finding, so the long names are used
    side = next(d.glob("*.sidecar.json.gz"))
    doc = json.loads(gzip.decompress(side.read_bytes()))
    for row in doc["frames"]:
        row[2] = "x" * 300 + "/" + row[2]
    side.write_bytes(gzip.compress(json.dumps(doc).encode()))
    res = analyze_path(d)
    assert check_document(res.doc) == []
    was = next(f for f in analyze_path(TRACES / "sync_item").findings if f.cause == "sync").location
    now = next(f for f in res.findings if f.cause == "sync").location
    assert now.exact and (now.file, now.line) == (
        "x" * 300 + "/" + was.file,
        was.line,
    )  # the long name is kept


# --- issue 31: numbers past float range, implicit steps, file-system tricks, bombs, spoofing ---------------------

_HUGE = "9" * 400  # an integer no float holds (float() raises OverflowError past 309 digits)
_MARK = 987654321012  # stands for the huge integer until the JSON is written


@pytest.mark.parametrize(
    "field", ["ts", "dur", "bytes", "Bytes", "blocks per SM", "est. achieved occupancy %", "Total Allocated"]
)
@pytest.mark.parametrize("sign", ["", "-"])
def test_an_integer_past_float_range_is_out_of_range_not_an_internal_error(field, sign, tmp_path):
    tb = _steps_with_kernel(TraceBuilder(), n=3)
    tb.memcpy("HtoD", ts=2600, dur=10, nbytes=4096, launch_ts=2500)
    kernel = next(e for e in tb.events if e["cat"] == "kernel")
    copy = next(e for e in tb.events if e["cat"] == "gpu_memcpy")
    if field in ("ts", "dur"):
        kernel[field] = _MARK
    elif field in ("bytes", "Bytes"):
        copy["args"][field] = _MARK
    elif field == "Total Allocated":
        tb.events.append(
            {
                "ph": "i",
                "cat": "cpu_instant_event",
                "name": "[memory]",
                "pid": 100,
                "tid": 1,
                "ts": 1500,
                "args": {"Total Allocated": _MARK, "Total Reserved": 2**30, "Device Type": 1, "Device Id": 0},
            }
        )
    else:
        kernel["args"][field] = _MARK
    data = tb.to_bytes().replace(str(_MARK).encode(), (sign + _HUGE).encode())
    p = tmp_path / "huge.pt.trace.json"
    p.write_bytes(data)
    doc = _doc_bytes(data)
    assert check_document(doc) == []
    if field == "ts":  # the event cannot be placed: dropped, and said so
        assert any("skipped 1 malformed event" in n for n in doc["notes"]), doc["notes"]
    if field == "dur" and not sign:
        assert any("more than a day" in n for n in doc["notes"]), doc["notes"]
    assert doc["metrics"]["step_ms"]["value"] == 1.0
    assert check_document(_cli_json(p)) == []


def _doc_bytes(data: bytes) -> dict:
    a = analyze(parse_trace_bytes(data, "built.json"))
    return build(a, diagnose(a))


def test_a_whole_trace_step_spanning_63_years_keeps_the_day_that_holds_the_trace():
    """No ProfilerStep: the trace is one step, which no more than an event can last more than a day."""
    tb = TraceBuilder()
    for i in range(3):
        tb.kernel("gemm", ts=i * 1000 + 100, dur=500, launch_ts=i * 1000 + 10)
    tb.op("aten::far_past", ts=-1e15, dur=1)
    tb.op("aten::far_future", ts=9.99e14, dur=1)
    doc = _doc(tb)
    assert check_document(doc) == []
    # the first launch (10 µs) to the last kernel's end (2600 µs), as without the two outliers
    assert doc["metrics"]["step_ms"]["value"] == 2.59, doc["metrics"]["step_ms"]
    assert any("2 event(s) more than a day away" in n for n in doc["notes"]), doc["notes"]


def _multi_member_bomb(path: Path, mb: float) -> Path:
    """About `mb` MB of gzip that inflates ~1000x: one member of 64 MiB of spaces, repeated."""
    middle = gzip.compress(b" " * (64 << 20), 9)
    with open(path, "wb") as f:
        f.write(gzip.compress(b'{"traceEvents":['))
        while f.tell() < mb * 1e6:
            f.write(middle)
        f.write(gzip.compress(b"]}"))
    return path


class _Counting:
    """The loader's temporary file, counting what is written to it."""

    written = 0

    def __init__(self, f) -> None:
        self.f = f

    def __getattr__(self, k):
        return getattr(self.f, k)

    def write(self, b) -> int:
        type(self).written += len(b)
        return self.f.write(b)

    def __enter__(self):
        self.f.__enter__()
        return self

    def __exit__(self, *a):
        return self.f.__exit__(*a)


def test_gzip_bomb_is_refused_by_its_ratio_before_much_is_written(tmp_path, monkeypatch):
    bomb = _multi_member_bomb(tmp_path / "bomb.pt.trace.json.gz", 0.3)
    spool = _limits._spool
    monkeypatch.setattr(_limits, "_spool", lambda: _Counting(spool()))
    _Counting.written = 0
    with pytest.raises(TraceError, match=r"over 200x its compressed size.*IDLEHOUND_MAX_GZIP_RATIO"):
        load_trace(bomb)
    assert _Counting.written < 100 * 2**20
    monkeypatch.setenv("IDLEHOUND_MAX_GZIP_RATIO", "5000")  # raised: the size limit stops it instead
    with pytest.raises(TraceError, match="over the 64 MiB limit"):
        load_trace(bomb, max_bytes=64 * 2**20)


@pytest.mark.parametrize("run", ["healthy", "memory_churn", "launch_bound"])
def test_recorded_gzip_traces_pass_the_ratio_limit_even_without_its_floor(run, monkeypatch):
    monkeypatch.setattr(_limits, "RATIO_FLOOR", 0)
    src = next((TRACES / run).glob("*.pt.trace.json.gz"))
    assert len(load_trace(src).events) > 0


def test_a_trace_larger_than_the_free_space_is_refused_before_it_is_copied(tmp_path, monkeypatch):
    src = next((TRACES / "healthy").glob("*.pt.trace.json.gz"))
    plain = tmp_path / "plain.pt.trace.json"
    plain.write_bytes(gzip.decompress(src.read_bytes()))
    monkeypatch.setattr(_limits, "_free_space", lambda spool: 1000)
    for p in (plain, src):
        with pytest.raises(TraceError, match=r"needs more than the 1000 bytes free in the temporary folder"):
            load_trace(p)


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="needs FIFOs")
def test_a_fifo_and_symlink_loops_are_named_as_such(tmp_path, run_cli):
    import os

    fifo = tmp_path / "x.pt.trace.json"
    os.mkfifo(fifo)
    loop = tmp_path / "loop.pt.trace.json"
    loop.symlink_to(loop.name)
    dangling = tmp_path / "dangling.pt.trace.json"
    dangling.symlink_to("gone.pt.trace.json")
    with pytest.raises(TraceError, match="not a regular file or folder \\(a FIFO"):
        load_trace(fifo)
    with pytest.raises(TraceError, match="a symbolic link that loops"):
        load_trace(loop)
    with pytest.raises(TraceError, match="a symbolic link to 'gone.pt.trace.json', which does not exist"):
        load_trace(dangling)


@pytest.mark.slow
def test_a_fifo_is_named_by_analyze_report_and_compare(tmp_path, run_cli):
    import os

    fifo = tmp_path / "x.pt.trace.json"
    os.mkfifo(fifo)
    for args in (("analyze", fifo), ("report", fifo, "-o", tmp_path / "r.html"), ("compare", fifo, fifo)):
        r = run_cli(*args, timeout=60)
        assert r.returncode == 2 and "a FIFO, device or socket" in r.stderr, (args, r.stderr)


def test_a_byte_order_mark_is_named(tmp_path):
    src = next((TRACES / "healthy").glob("*.pt.trace.json.gz"))
    p = tmp_path / "bom.pt.trace.json"
    p.write_bytes(b"\xef\xbb\xbf" + gzip.decompress(src.read_bytes()))
    with pytest.raises(TraceError, match="starts with a UTF-8 byte-order mark"):
        load_trace(p)


def test_lint_names_the_line_of_a_nul_byte(tmp_path):
    from idlehound.errors import IdlehoundError
    from idlehound.lint._source import parse_source, read_source

    p = tmp_path / "nul.py"
    p.write_bytes(b"import os\nx = 1\x00\n")
    with pytest.raises(IdlehoundError, match=r"nul.py: not valid Python \(line 2: a NUL byte") as e:
        parse_source(read_source(p), str(p))
    assert "None" not in str(e.value)


def test_html_shows_escapes_newlines_and_bidi_controls_from_names(tmp_path):
    from html.parser import HTMLParser

    from idlehound.report.html import render_html

    spoof = "gemm\x1b[31m\nfake line\u202eexe.txt"
    tb = _steps_with_kernel(TraceBuilder(), n=3)
    for e in tb.events:
        if e["cat"] == "kernel":
            e["name"] = spoof
    folder = tmp_path / "run\u202e\x1b[2J"
    folder.mkdir()
    p = folder / "t\n\u2066x.pt.trace.json"
    p.write_bytes(tb.to_bytes())
    page = render_html(build(a := analyze(load_trace(p)), diagnose(a)))

    class Text(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.title, self.text, self.in_title, self.in_script = "", "", False, False

        def handle_starttag(self, tag, attrs):
            self.in_title, self.in_script = tag == "title", tag == "script"
            for _, v in attrs:
                self.text += v or ""

        def handle_endtag(self, tag):
            self.in_title = self.in_script = False

        def handle_data(self, data):
            if self.in_title:
                self.title += data
            elif not self.in_script:  # the JSON data keeps the names as recorded (JSON escapes controls)
                self.text += data

    t = Text()
    t.feed(page)
    assert "run\\u202e\\x1b[2J/t\\x0a\\u2066x.pt.trace.json" in t.title
    assert "gemm\\x1b[31m\\x0afake line\\u202eexe.txt" in t.text
    for c in "\x1b\u202e\u2066":
        assert c not in t.title + t.text
    assert "\n" not in t.title


def test_gpu_work_a_day_after_the_step_that_launched_it_does_not_stretch_the_step():
    """A kernel whose time is far off (9.99e14 µs) but whose launch lies inside step 1: the step must not last
    31 years; that kernel cannot be the step's (the same outlier rule as for events lasting over a day)."""
    tb = _steps_with_kernel(TraceBuilder(), n=3)
    tb.kernel("gemm_far", ts=9.99e14, dur=500, launch_ts=1020)
    doc = _doc(tb)
    assert check_document(doc) == []
    assert doc["trace"]["steps"] == [0, 1, 2]
    assert doc["metrics"]["step_ms"]["value"] == 1.0
    assert any("1 GPU op(s) ending more than a day after" in n for n in doc["notes"]), doc["notes"]


@pytest.mark.parametrize("ts", [-8.9e15, -4.7e15])
def test_a_step_marker_at_a_far_negative_time_lasts_its_own_length(ts):
    """Its end was taken as the later of its host end and -1 ns (no GPU work), or its start as -2**62 ns: a step of
    282 years. Now it lasts as its marker says, like every other step."""
    tb = _steps_with_kernel(TraceBuilder(), n=3)
    tb.step(7, ts=ts, dur=1000)
    doc = _doc(tb)
    assert check_document(doc) == []
    assert doc["trace"]["steps"] == [7, 0, 1, 2]
    assert [s["duration_ms"] for s in doc["steps"]] == [1.0, 1.0, 1.0, 1.0]
