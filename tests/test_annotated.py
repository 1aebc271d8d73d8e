"""The annotated trace (`idlehound report RUN -o NAME.pt.trace.json[.gz]`): the original events untouched plus
idlehound's tracks, valid Trace Event Format (tests/tef_check.py, written from the format's specification), and
analysed by idlehound's own loader exactly as the original is."""

import gzip
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from idlehound.analysis import blocking_waits, idle_gaps
from idlehound.cli import main
from idlehound.errors import IdlehoundError
from idlehound.pipeline import analyze_path
from idlehound.report.annotated import CAT, GAPS_TRACK, PID, STEPS_COUNTER

from . import tef_check
from .conftest import SHARED, TRACES

ALL = sorted(TRACES.rglob("*.pt.trace.json.gz"))
THIRD_PARTY = sorted(SHARED.glob("*.pt.trace.json.gz")) if SHARED.is_dir() else []  # other torch versions


def _annotate_in_copy(trace: Path, tmp: Path, suffix: str = ".gz") -> tuple[Path, Path]:
    """The run folder copied without its trace, the annotated trace written there under the trace's own name
    (TensorBoard's layout): the copy's sidecar and run.json are read for it as for the original."""
    run = tmp / "run"
    run.mkdir()
    for p in trace.parent.iterdir():
        if p.is_file() and not p.name.endswith((".pt.trace.json.gz", ".pt.trace.json")):
            shutil.copy(p, run / p.name)
    name = trace.name if suffix == ".gz" else trace.name[: -len(".gz")]
    out = run / name
    r = CliRunner().invoke(main, ["report", str(trace), "-o", str(out)])
    assert r.exit_code == 0, r.output
    return run, out


def _same_analysis(trace: Path, annotated: Path) -> None:
    """The annotated trace's run folder (TensorBoard's layout: the folder, not the file, is given) analyses as
    the original, but for the file's own path and size."""
    a, b = analyze_path(trace).doc, analyze_path(annotated.parent).doc
    for d in (a, b):
        d["trace"].pop("path"), d["trace"].pop("size_bytes")
    assert a == b


def _ours(events: list) -> list:
    return [e for e in events if e.get("cat") == CAT or e.get("pid") == PID]


@pytest.fixture(scope="module")
def sync_item(tmp_path_factory):
    trace = next((TRACES / "sync_item").glob("*.pt.trace.json.gz"))
    run, out = _annotate_in_copy(trace, tmp_path_factory.mktemp("sync"))
    return trace, out, tef_check.load(trace), tef_check.load(out)


def test_the_original_events_are_there_unchanged_and_ours_follow(sync_item):
    trace, out, original, annotated = sync_item
    assert annotated[: len(original)] == original
    assert all(e.get("cat") == CAT or e["pid"] == PID for e in annotated[len(original) :])
    top_a, top_o = (json.loads(gzip.decompress(p.read_bytes())) for p in (out, trace))
    top_a.pop("traceEvents"), top_o.pop("traceEvents")
    assert top_a == top_o  # the other top-level keys (traceName, deviceProperties...) as they were


def test_it_follows_the_trace_event_format_and_adds_no_problem(sync_item):
    _, _, original, annotated = sync_item
    slices = [e for e in original if e.get("ph") == "X"]  # what our flows bind to
    assert Counter(tef_check.check(_ours(annotated) + slices)) - Counter(tef_check.check(slices)) == Counter()
    assert len(_ours(annotated)) > 100
    # the profiler's own file has problems of its own (flows cut at the window's edges, Python frames that
    # overlap): the annotated file has exactly those, no more
    assert Counter(tef_check.check(annotated)) == Counter(tef_check.check(original))


def test_it_carries_every_idle_gap_every_finding_the_counters_and_the_waits(sync_item):
    trace, _, _, annotated = sync_item
    res = analyze_path(trace)
    a, ours = res.analysis, _ours(annotated)
    tracks = {e["args"]["name"]: e["tid"] for e in ours if e["ph"] == "M" and e["name"] == "thread_name"}
    gaps = [e for e in ours if e["ph"] == "X" and e["tid"] == tracks[GAPS_TRACK]]
    g = idle_gaps(a)
    assert len(gaps) == len(g.cause) > 0
    idle_ns = sum(round((e["ts"] + e["dur"]) * 1000) - round(e["ts"] * 1000) for e in gaps)
    assert abs(idle_ns - sum(a.idle_ns.values())) <= len(gaps)  # the gaps are the idle time (µs rounding)
    by_cause = Counter()
    for e in gaps:
        by_cause[e["name"].split(" at ")[0]] += e["dur"]
    assert by_cause.most_common(1)[0][0] == "sync"  # most of the idle time: the planted syncs
    assert any(e["name"].endswith("sync_item.py:17") for e in gaps)  # the planted print(loss)
    # each finding: a track with a range over the steps its fix shortens (the sync: every step)
    (tid,) = [t for name, t in tracks.items() if name.startswith("finding 1: ")]
    first = [e for e in ours if e["ph"] == "X" and e["tid"] == tid]
    assert first and first[0]["args"]["cause"] == "sync"
    assert sum(len(e["args"]["steps"]) for e in first) == a.n_steps
    steps = a.steps
    assert round(first[0]["ts"] * 1000) == steps[0].start_ns + _base(a)
    # counters: the recorded step, and the replay's step with each replayed fix alone
    recorded = [e["args"]["ms"] for e in ours if e["ph"] == "C" and e["name"] == STEPS_COUNTER]
    assert recorded == [round(s.duration_ns / 1e6, 4) for s in steps]
    for i, f in enumerate(res.doc["findings"], 1):
        series = [
            e["args"]["ms"] for e in ours if e["ph"] == "C" and e["name"].endswith(f"#{i} {f['cause']}")
        ]
        if "replay" in f["details"]:
            mean = sum(series) / len(series)
            assert len(series) == a.n_steps and mean == pytest.approx(
                f["details"]["replay"]["predicted_step_ms"], abs=1e-3
            )
    # one flow per blocking call that waited, from the call to the GPU op
    flows = [e for e in ours if e["ph"] in "sf"]
    calls, ops = blocking_waits(a)
    assert len(flows) == 2 * calls.size > 0
    ev = a.trace.events
    assert {ev.name_of(int(c)) for c in calls} <= {
        "cudaStreamSynchronize",
        "cudaMemcpyAsync",
        "cudaDeviceSynchronize",
    }
    assert all(e["pid"] != PID for e in flows)  # bound to the profiler's own events


def _base(a) -> int:
    m = a.trace.metadata
    return m["baseTimeNanoseconds"] if m.get("epoch_timestamps") else 0


def test_the_annotated_run_folder_analyses_as_the_original(sync_item):
    trace, out, _, _ = sync_item
    _same_analysis(trace, out)


def test_plain_json_output_and_the_size_added(tmp_path):
    trace = next((TRACES / "launch_bound").glob("*.pt.trace.json.gz"))  # the most gaps per byte of trace
    _, out = _annotate_in_copy(trace, tmp_path, suffix="")
    raw = gzip.decompress(trace.read_bytes())
    data = out.read_bytes()
    assert data[:1000] == raw[:1000] and json.loads(data)
    assert (len(data) - len(raw)) / len(raw) <= 0.10


def test_an_existing_file_and_the_input_are_never_overwritten(tmp_path, sync_item):
    trace = sync_item[0]
    out = tmp_path / "a.pt.trace.json.gz"
    out.write_bytes(b"earlier")
    r = CliRunner().invoke(main, ["report", str(trace), "-o", str(out)])
    assert r.exit_code == 2 and "already exists" in r.stderr and out.read_bytes() == b"earlier"
    r = CliRunner().invoke(main, ["report", str(trace), "-o", str(trace), "--force"])
    assert r.exit_code == 2 and "input trace" in r.stderr
    assert not list(tmp_path.glob("*.part"))


def test_the_checker_catches_each_kind_of_problem():
    """tests/tef_check.py is no rubber stamp: one planted break of each rule, each reported."""
    x = {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10}
    cases = {
        "unknown phase": [{**x, "ph": "Q"}],
        "no pid": [{k: v for k, v in x.items() if k != "pid"}],
        "ts is not a number": [{**x, "ts": "0"}],
        "without a dur": [{**x, "dur": -1}],
        "without nesting": [x, {**x, "name": "b", "ts": 5, "dur": 10}],
        "args are not numbers": [{"ph": "C", "name": "c", "pid": 1, "ts": 0, "args": {"v": "x"}}],
        "E without a B": [{"ph": "E", "pid": 1, "tid": 1, "ts": 1}],
        "never ended": [{"ph": "B", "name": "b", "pid": 1, "tid": 1, "ts": 1}],
        "1 start(s) and 0 end(s)": [
            x,
            {"ph": "s", "cat": "c", "name": "f", "id": 1, "pid": 1, "tid": 1, "ts": 1},
        ],
        "no an enclosing slice": [],
        "not in time order": [
            x,
            {"ph": "s", "cat": "c", "name": "f", "id": 2, "pid": 1, "tid": 1, "ts": 5},
            {"ph": "f", "bp": "e", "cat": "c", "name": "f", "id": 2, "pid": 1, "tid": 1, "ts": 2},
        ],
        "has no an enclosing slice": [],
        "binding point": [
            {"ph": "f", "bp": "x", "cat": "c", "name": "f", "id": 3, "pid": 1, "tid": 1, "ts": 2}
        ],
        "metadata without args.name": [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {}}],
        "unknown metadata": [{"ph": "M", "name": "colour", "pid": 1, "args": {}}],
    }
    cases["no an enclosing slice"] = [
        x,
        {"ph": "s", "cat": "c", "name": "f", "id": 4, "pid": 1, "tid": 1, "ts": 5},
        {"ph": "f", "bp": "e", "cat": "c", "name": "f", "id": 4, "pid": 1, "tid": 2, "ts": 6},
    ]
    del cases["has no an enclosing slice"]
    for problem, events in cases.items():
        found = tef_check.check(events)
        want = "has no an enclosing slice" if problem == "no an enclosing slice" else problem
        assert any(want in p for p in found), (problem, found)
    ok = [
        x,
        {"ph": "s", "cat": "c", "name": "f", "id": 5, "pid": 1, "tid": 1, "ts": 5},
        {**x, "tid": 2, "ts": 3},
    ]
    ok.append({"ph": "f", "bp": "e", "cat": "c", "name": "f", "id": 5, "pid": 1, "tid": 2, "ts": 8})
    assert tef_check.check(ok) == []


def test_perfetto_trace_processor_reads_it(sync_item):
    tp = pytest.importorskip(
        "perfetto.trace_processor",
        reason="the perfetto package is optional: its trace processor binary is downloaded on first use, "
        "which these machines cannot do",
    )
    _, out, _, annotated = sync_item
    try:
        proc = tp.TraceProcessor(trace=str(out))
    except Exception as e:  # no binary and no network
        pytest.skip(f"perfetto's trace processor did not start: {e}")
    n = proc.query(f"select count(*) as n from slice where category = '{CAT}'").as_pandas_dataframe()["n"][0]
    assert n == sum(1 for e in _ours(annotated) if e["ph"] == "X")


@pytest.mark.slow
@pytest.mark.parametrize(
    "trace", ALL, ids=[str(t.relative_to(TRACES).parent) + "/" + t.name[:12] for t in ALL]
)
def test_every_recorded_trace_annotates_validly_within_10pct_and_analyses_the_same(trace, tmp_path):
    _, out = _annotate_in_copy(trace, tmp_path)
    original, annotated = tef_check.load(trace), tef_check.load(out)
    assert annotated[: len(original)] == original
    assert Counter(tef_check.check(annotated)) == Counter(tef_check.check(original))
    size = len(gzip.decompress(trace.read_bytes()))
    added = len(gzip.decompress(out.read_bytes())) - size
    assert 0 < added <= 0.10 * size
    _same_analysis(trace, out)


@pytest.mark.slow
@pytest.mark.parametrize("trace", THIRD_PARTY, ids=[t.name[:30] for t in THIRD_PARTY])
def test_the_shared_third_party_traces_too(trace, tmp_path):
    test_every_recorded_trace_annotates_validly_within_10pct_and_analyses_the_same(trace, tmp_path)


def _built(tmp_path: Path, **top) -> Path:
    from .unit.tracebuilder import TraceBuilder

    tb = TraceBuilder()
    for i in range(3):
        t0 = i * 1000
        tb.step(i, ts=t0, dur=900)
        ext = tb.op("aten::mm", t0 + 5, 40)
        tb.kernel("gemm", ts=t0 + 300, dur=300, launch_ts=t0 + 10, ext=ext)
    path = tmp_path / "built.pt.trace.json"
    path.write_bytes(tb.to_bytes(**top))
    return path


def test_keys_and_arrays_after_the_events_are_kept_as_they_were(tmp_path):
    """Kineto writes short keys after traceEvents; other tools may write arrays there too. The events' close is
    where the loader found it, so ours go into traceEvents and everything after it stays as it was."""
    for top in (
        {"traceName": "a ] b", "displayTimeUnit": "ms"},
        {"zzz": [{"name": "not an event"}], "n": [1]},
    ):
        src = _built(tmp_path, **top)
        out = tmp_path / "out.pt.trace.json"
        r = CliRunner().invoke(main, ["report", str(src), "-o", str(out), "--force"])
        assert r.exit_code == 0, r.output
        doc, before = json.loads(out.read_text()), json.loads(src.read_text())
        assert {k: doc[k] for k in top} == top
        ours = doc["traceEvents"][len(before["traceEvents"]) :]
        assert doc["traceEvents"][: len(before["traceEvents"])] == before["traceEvents"]
        assert ours and all(e.get("pid") == PID or e.get("cat") == CAT for e in ours)
        out.unlink()


def test_a_trace_changed_since_it_was_analysed_is_refused(tmp_path):
    src = _built(tmp_path)
    from idlehound.pipeline import analyze_path as run
    from idlehound.report.annotated import write_annotated

    res = run(src)
    src.write_bytes(b" " + src.read_bytes())  # one byte more before the events' close
    out = tmp_path / "out.pt.trace.json"
    with pytest.raises(IdlehoundError, match="changed since it was analysed"):
        write_annotated(res.analysis, res.findings, out)
    assert not out.exists() and not list(tmp_path.glob("*.part"))
