import gzip
import os
import shutil

import pytest

import idlehound
from idlehound import TraceError, load_trace
from idlehound.trace import parse_trace_bytes

from ..conftest import SCRIPTS, TRACES, shared
from .tracebuilder import TraceBuilder


def _small() -> bytes:
    tb = TraceBuilder()
    tb.step(1, 0, 100)
    tb.kernel("k", 10, 50, launch_ts=5)
    return tb.to_bytes()


def _write(path, data: bytes, gz: bool = True):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def test_loads_gz_and_plain_json(tmp_path):
    data = _small()
    a = load_trace(_write(tmp_path / "w.1.pt.trace.json.gz", data))
    b = load_trace(_write(tmp_path / "w.2.pt.trace.json", data, gz=False))
    assert len(a.events) == len(b.events) > 0


def test_columns_are_numpy_with_interned_names():
    t = load_trace(shared("h200_torch211_amp.pt.trace.json.gz"))
    ev = t.events
    assert ev.ts.dtype.kind == "i" and ev.name.dtype.kind == "i"
    assert len(ev.names) < len(ev) / 3  # names are interned, not stored per event
    assert "ProfilerStep#2" in ev.names


def test_log_dir_picks_newest_run_and_lists_workers(tmp_path):
    data = _small()
    _write(tmp_path / "old" / "w0.100.pt.trace.json.gz", data)
    _write(tmp_path / "new" / "rank0.200.pt.trace.json.gz", data)
    _write(tmp_path / "new" / "rank1.201.pt.trace.json.gz", data)
    t = load_trace(tmp_path)
    assert t.worker == "rank1" and t.path.parent.name == "new"
    assert any("2 workers" in w for w in t.warnings)
    assert load_trace(tmp_path, worker="rank0").worker == "rank0"
    assert load_trace(tmp_path, run="old").worker == "w0"


def test_log_dir_errors_name_the_choices(tmp_path):
    _write(tmp_path / "r" / "w0.1.pt.trace.json.gz", _small())
    with pytest.raises(TraceError, match="workers: w0"):
        load_trace(tmp_path, worker="nope")
    with pytest.raises(TraceError, match="runs: r"):
        load_trace(tmp_path, run="nope")
    with pytest.raises(TraceError, match="no \\*.pt.trace.json"):
        load_trace(tmp_path / "r" / "..", run=None) if False else load_trace(_empty(tmp_path))


def _empty(tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    return d


def _sync_location(folder):
    a = idlehound.analyze(load_trace(folder))
    return a, next(f for f in idlehound.diagnose(a) if f.cause == "sync").location


def test_capture_run_folder_loads_with_its_sidecar(tmp_path):
    """The sidecar beside the trace turns the sync finding's def line into the planted line that syncs."""
    a, loc = _sync_location(TRACES / "sync_item")
    planted = (SCRIPTS / "planted" / "sync_item.py").read_text().splitlines()
    assert loc.exact and loc.file == "tests/scripts/planted/sync_item.py"
    assert "# planted" in planted[loc.line - 1]  # print(loss) or loss.item(), not the loop's first line
    assert not any("approximate" in n for n in a.notes)
    bare = tmp_path / "sync_item"
    shutil.copytree(TRACES / "sync_item", bare)
    for side in bare.glob("*.sidecar.json*"):
        side.unlink()
    b, def_line = _sync_location(bare)
    assert not def_line.exact and def_line.line < loc.line
    assert any("def lines (approximate)" in n for n in b.notes)


@pytest.mark.parametrize(
    "data,problem",
    [
        (b"", "empty file"),
        (b"[1, 2, 3]", "top level is not a JSON object"),
        (b'{"traceEvents": [', "invalid or truncated JSON"),
        (b'{"foo": 1}', "no 'traceEvents'"),
        (b'{"traceEvents": []}', "'traceEvents' is empty"),
        (b'{"traceEvents": 5}', "not a list of events"),
        (
            b'{"traceEvents": [{"ph": "X", "name": "draw", "cat": "gfx", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]}',
            "Chrome trace from another tool",
        ),
    ],
)
def test_bad_input_is_a_one_line_trace_error(data, problem):
    with pytest.raises(TraceError) as e:
        parse_trace_bytes(data, "x.json")
    assert problem in str(e.value) and "\n" not in str(e.value) and str(e.value).startswith("x.json: ")


def test_odd_typed_fields_cost_only_that_event():
    tb = TraceBuilder(cuda=False)
    tb.step(1, 0, 100)
    tb.op("aten::mm", 10, 20)
    tb.events.append(
        {"ph": "X", "cat": "cpu_op", "name": "bad", "ts": "soon", "dur": [1], "pid": 1, "tid": 1}
    )
    tb.events.append({"ph": "X", "cat": "cpu_op", "name": "huge", "ts": 1e300, "dur": 1, "pid": 1, "tid": 1})
    tb.events.append(
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": 5,
            "ts": 30,
            "dur": 1,
            "pid": 1,
            "tid": 1,
            "args": {"External id": 2**80},
        }
    )
    t = parse_trace_bytes(tb.to_bytes(), "odd.json")
    assert any("skipped 2 malformed" in w for w in t.warnings)
    assert len(t.events) == 3  # the step, aten::mm and the event whose name was not a string


def test_truncated_gzip_is_a_trace_error(tmp_path):
    p = tmp_path / "t.pt.trace.json.gz"
    full = gzip.compress(_small())
    p.write_bytes(full[: len(full) // 2])
    with pytest.raises(TraceError, match="gzip"):
        load_trace(p)


def test_missing_path():
    with pytest.raises(TraceError, match="no such file"):
        load_trace("/nonexistent/trace.json")


def test_never_touches_the_input(tmp_path):
    src = shared("cpu_torch213_plain.pt.trace.json.gz")
    dst = tmp_path / src.name
    shutil.copy(src, dst)
    before = (dst.stat().st_mtime_ns, dst.read_bytes())
    load_trace(dst)
    assert (dst.stat().st_mtime_ns, dst.read_bytes()) == before
    assert os.listdir(tmp_path) == [src.name]
