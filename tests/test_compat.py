"""Traces as every PyTorch release wrote them: small synthetic traces in each historical layout (exact figures),
and, when IDLEHOUND_CORPUS points at a copy of the peers' published traces, the real ones (docs/compatibility.md)."""

from __future__ import annotations

import gzip
import json
import os
import pickle
from pathlib import Path

import pytest

from idlehound import analyze, diagnose
from idlehound.analysis import _observer as observer
from idlehound.errors import TraceError
from idlehound.pipeline import analyze_path
from idlehound.trace import list_traces, load_trace, parse_trace_bytes

from .conftest import TRACES
from .unit.tracebuilder import TraceBuilder

EPOCH_US = 1_623_142_623_460_016  # a real torch 1.8 trace's first timestamp (tb_plugin resnet50 sample)


def _doc(events: list[dict], **top) -> bytes:
    return json.dumps({"schemaVersion": 1, "traceEvents": events, **top}).encode()


def _shift(tb: TraceBuilder, by: float) -> None:
    for e in tb.events:
        e["ts"] = e["ts"] + by


def _dataloader_job(tb: TraceBuilder) -> None:
    """Two 1000 µs steps: 400 µs waiting for the batch, then a 500 µs kernel launched at 450 µs."""
    for i in range(2):
        t = i * 1000
        tb.step(i + 1, ts=t, dur=1000)
        tb.dataloader(t + 10, 400)
        ext = tb.op("aten::mm", t + 440, 30)
        tb.kernel("volta_sgemm_128x64_nn", ts=t + 460, dur=500, launch_ts=t + 450, ext=ext)


# -- timestamps ------------------------------------------------------------------------------------------------


def test_epoch_microseconds_without_base_time_are_rebased_not_dropped():
    rel, old = TraceBuilder(), TraceBuilder()
    _dataloader_job(rel)
    _dataloader_job(old)
    _shift(old, EPOCH_US)
    old_bytes = json.dumps({"schemaVersion": 1, "deviceProperties": [], "traceEvents": old.events}).encode()
    t = parse_trace_bytes(old_bytes, "old.json")
    assert int(t.events.ts.min()) == 0 and t.warnings == []
    assert t.metadata["baseTimeNanoseconds"] == EPOCH_US * 1000 and t.metadata["epoch_timestamps"] is True
    a_old, a_rel = analyze(t), analyze(parse_trace_bytes(rel.to_bytes(), "rel.json"))
    assert a_old.step_ms == a_rel.step_ms == pytest.approx(1.0)
    assert a_old.breakdown_ns == a_rel.breakdown_ns
    assert a_old.breakdown_ns["DataLoader"] == 800_000


def test_epoch_times_keep_nanoseconds_and_metadata_rows_stay_at_zero():
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "ts": 0, "args": {"name": "python"}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": EPOCH_US, "dur": 3},
        # ns-precision epoch µs (early 2024): .5 µs is exact in a double at this magnitude
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::add",
            "pid": 1,
            "tid": 1,
            "ts": EPOCH_US + 7.5,
            "dur": 1.25,
        },
    ]
    ev = parse_trace_bytes(_doc(events), "ns.json").events
    assert ev.ts.tolist() == [0, 0, 7_500] and ev.dur.tolist() == [0, 3_000, 1_250]


def test_a_stray_time_of_the_other_kind_is_dropped_and_counted():
    tb = TraceBuilder(cuda=False)
    tb.step(1, ts=EPOCH_US, dur=100)
    tb.op("aten::mm", EPOCH_US + 10, 20)
    tb.op("aten::relu", 5, 1)  # a relative time among epoch ones: not on the trace's clock
    t = parse_trace_bytes(_doc(tb.events), "mixed.json")
    assert len(t.events) == 2 and any("skipped 1 malformed" in w for w in t.warnings)


def test_relative_times_with_base_time_are_left_as_they_are():
    tb = TraceBuilder(cuda=False)
    tb.step(1, ts=4_203_669_603_018.75, dur=100)  # ROCm 6.2 trace: µs since a quarter-year boundary
    t = parse_trace_bytes(tb.to_bytes(), "rel.json")
    assert t.events.ts.tolist() == [4_203_669_603_018_750] and "epoch_timestamps" not in t.metadata


# -- categories and names of older releases ---------------------------------------------------------------------


def _torch18(tb: TraceBuilder) -> bytes:
    """The same events in PyTorch 1.8/1.9 layout: Operator/Runtime/Kernel cats, DataLoader and ProfilerStep as
    Operators, lower-case 'external id' on runtime and kernel events, epoch µs."""
    cats = {
        "cpu_op": "Operator",
        "user_annotation": "Operator",
        "cuda_runtime": "Runtime",
        "kernel": "Kernel",
    }
    out = []
    for e in tb.events:
        if e["cat"] == "gpu_user_annotation":
            continue  # not written before torch 1.10
        e = dict(e, cat=cats.get(e["cat"], e["cat"]), ts=e["ts"] + EPOCH_US, args=dict(e["args"]))
        if e["cat"] in ("Runtime", "Kernel") and "External id" in e["args"]:
            e["args"]["external id"] = e["args"].pop("External id")
        out.append(e)
    return _doc(out, deviceProperties=[{"id": 0, "name": "Tesla V100-DGXS-32GB", "computeMajor": 7}])


def test_torch18_layout_dataloader_operator_is_named_as_data_loading(monkeypatch):
    # the model's hand-computed gain: no observer correction (a bare trace now gets the prior, docs/metrics.md)
    monkeypatch.setattr(observer, "load_prior", lambda: None)
    tb = TraceBuilder()
    _dataloader_job(tb)
    a = analyze(parse_trace_bytes(_torch18(tb), "t18.json"))
    assert a.step_source == "ProfilerStep" and [s.number for s in a.steps] == [1, 2]
    assert a.breakdown_ns["DataLoader"] == 800_000 and a.breakdown_ns["Kernel"] == 1_000_000
    assert a.idle_ns["data_loading"] == 800_000
    finding = diagnose(a)[0]
    # recoverable is the replay's gain: 0.4 ms of loader wait per step, less the 50 µs a prepared batch still costs
    assert finding.cause == "data_loading" and finding.recoverable_ms == pytest.approx(0.35)
    assert any("num_workers=0" in x for x in finding.evidence)


def test_lower_case_external_id_links_a_launch_to_its_op():
    from idlehound.analysis._context import _Context

    tb = TraceBuilder()
    _dataloader_job(tb)
    ev = parse_trace_bytes(_torch18(tb), "t18.json").events
    ctx = _Context(ev)
    ops = ctx.op_of_ext(ev.ext[ctx.launch])
    assert [ev.name_of(i) for i in ops] == ["aten::mm", "aten::mm"]


def test_cuda_driver_launches_count_as_runtime():
    tb = TraceBuilder()
    tb.step(1, ts=0, dur=100)
    corr = tb.runtime("cuLaunchKernel", 10, 20, cat="cuda_driver")
    tb._x("kernel", "triton_poi_fused_0", 40, 30, pid=0, tid=7, correlation=corr, device=0, stream=7)
    a = analyze(parse_trace_bytes(tb.to_bytes(), "drv.json"))
    assert a.breakdown_ns["Runtime"] == 20_000 and a.breakdown_ns["Kernel"] == 30_000


def _rocm_job() -> TraceBuilder:
    """Three steps of two tiny kernels each; the very first hipLaunchKernel takes 6.5 ms (code-object load)."""
    tb = TraceBuilder()
    t = 0.0
    for i in range(3):
        first = 6500.0 if i == 0 else 8.0
        tb.step(i + 1, ts=t, dur=first + 100)
        for j, dur in enumerate((first, 8.0)):
            launch_ts = t + 10 + j * (first + 20)
            corr = tb.runtime("hipLaunchKernel" if j == 0 else "hipExtModuleLaunchKernel", launch_ts, dur)
            tb._x(
                "kernel",
                f"Cijk_Alik_Bljk_SB_MT64x16x32_{j}",
                launch_ts + dur + 2,
                5,
                pid=0,
                tid=7,
                correlation=corr,
                device=0,
                stream=7,
            )
        t += first + 100
    tb.runtime("hipDeviceSynchronize", t - 20, 10)
    return tb


def test_rocm_trace_is_rocm_and_one_slow_first_launch_is_not_launch_bound():
    a = analyze(parse_trace_bytes(_rocm_job().to_bytes(), "rocm.json"))
    assert a.device.accelerator == "ROCm" and a.kernels.count == 6
    assert a.kernels.slow_launches == 1 and a.kernels.slow_launch_max_us == 6500.0
    assert any("one-off launch" in n for n in a.notes)
    # 6.76 ms of GPU idle in launch calls, 6.5 ms of it in the one slow call: not per-launch overhead
    assert a.idle_ns["launch"] == 6_764_000 and a.kernels.slow_launch_idle_ns == 6_500_000
    assert [f.cause for f in diagnose(a)] == []


def test_hip_names_play_their_roles():
    from idlehound.analysis import _roles as roles

    assert all(
        map(
            roles.is_launch,
            ("hipLaunchKernel", "hipExtModuleLaunchKernel", "hipModuleLaunchKernel", "hipGraphLaunch"),
        )
    )
    assert roles.is_enqueue("hipMemcpyAsync") and roles.is_enqueue("hipMemsetAsync")
    assert all(
        map(
            roles.is_sync_call,
            ("hipDeviceSynchronize", "hipStreamSynchronize", "hipMemcpyWithStream", "hipMemcpy", "hipFree"),
        )
    )
    assert not roles.is_launch("hipGetDevicePropertiesR0600") and not roles.is_sync_call("hipMemcpyAsync")


def _mtia_job(props: bool) -> bytes:
    tb = TraceBuilder(cuda=False)
    tb.step(1, ts=0, dur=1000)
    tb.op("aten::mm", 10, 100)
    tb._x("mtia_runtime", "runFunction - job_prep_and_submit_for_execution", 120, 300, correlation=5)
    tb._x("mtia_ccp_events", "dma_request", 500, 50, pid=17, tid=801, direction="DEVICE_TO_HOST", size=16)
    dev = [{"id": 17, "name": "ARTEMIS", "runtimeMajorVersion": 1}] if props else []
    return _doc(tb.events, deviceProperties=dev, baseTimeNanoseconds=1_767_189_312_000_000_000)


@pytest.mark.parametrize("props", [True, False])
def test_mtia_trace_says_what_it_shows(tmp_path, props):
    p = tmp_path / "mtia_rank_0.json"
    p.write_bytes(_mtia_job(props))
    res = analyze_path(p)
    assert res.doc["device"]["accelerator"] == "MTIA"
    assert res.doc["device"]["name"] == ("ARTEMIS" if props else "MTIA")
    assert res.doc["headline"].startswith("MTIA trace: its device events are not measured")
    text = " ".join([res.doc["headline"], *res.doc["notes"]])
    assert "CPU-only" not in text and "CUPTI" not in text
    assert "mtia_ccp_events: 1, mtia_runtime: 1" in text


def test_gpu_events_without_device_properties_are_a_gpu():
    tb = TraceBuilder()
    _dataloader_job(tb)
    a = analyze(parse_trace_bytes(_doc(tb.events), "noprops.json"))
    assert a.device.name == "GPU 0 (the trace has no deviceProperties)" and a.device.accelerator == "CUDA"


def test_no_profiler_step_analyses_the_whole_trace():
    tb = TraceBuilder()
    ext = tb.op("aten::mm", 100, 50)
    tb.kernel("gemm", ts=160, dur=40, launch_ts=110, ext=ext)
    a = analyze(parse_trace_bytes(tb.to_bytes(), "nostep.json"))
    assert a.step_source == "whole trace" and a.steps[0].duration_ns == 100_000


# -- sanity ------------------------------------------------------------------------------------------------------


def test_a_step_that_ends_after_the_recording_window_is_ignored():
    tb = TraceBuilder()
    ext = tb.op("aten::mm", 100, 50)
    tb.kernel("gemm", ts=160, dur=40, launch_ts=110, ext=ext)
    tb._x("user_annotation", "ProfilerStep#1", 90, 13_336_315.805, **{"External id": 99})
    tb.events.append(
        {
            "ph": "X",
            "cat": "Trace",
            "name": "PyTorch Profiler (0)",
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "ts": 0,
            "dur": 355_494.184,
        }
    )
    tb.events.append(
        {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 355_494.184}
    )
    a = analyze(parse_trace_bytes(tb.to_bytes(), "broken.json"))
    assert a.step_source == "whole trace" and a.steps[0].duration_ns == 100_000
    assert any("ignored ProfilerStep#1: it lasts 13336.32 ms" in n for n in a.notes)


def test_a_step_inside_the_recording_window_is_kept():
    tb = TraceBuilder()
    tb.step(1, ts=0, dur=1000)
    tb.events.append({"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 1200})
    a = analyze(parse_trace_bytes(tb.to_bytes(), "ok.json"))
    assert a.step_source == "ProfilerStep" and a.steps[0].duration_ns == 1_000_000


def _strip_python(src: Path, dst: Path) -> Path:
    doc = json.loads(gzip.decompress(src.read_bytes()))
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") != "python_function"]
    doc.pop("with_stack", None)
    dst.write_bytes(json.dumps(doc).encode())
    return dst


def test_empty_cache_advice_only_when_the_trace_shows_the_call(tmp_path):
    src = next((TRACES / "memory_churn").glob("*.pt.trace.json.gz"))
    with_calls = next(f for f in analyze_path(src).findings if f.cause == "memory_churn")
    assert "empty_cache" in with_calls.fix
    blind = analyze_path(_strip_python(src, tmp_path / "churn.pt.trace.json"))
    churn = next(f for f in blind.findings if f.cause == "memory_churn")
    assert blind.analysis.memory.empty_cache_calls == 0
    assert "empty_cache" not in churn.fix + churn.code + " ".join(churn.evidence)


# -- errors that tell the truth ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data,problem",
    [
        (
            _doc([{"ph": "X", "cat": "gfx", "name": "draw", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]),
            "a Kineto trace, but no event has a 'cat' this version reads (cpu_op, kernel, ...; categories in the file: gfx)",
        ),
        (
            b'{"traceEvents": [{"ph": "X", "cat": "gfx", "name": "draw", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]}',
            "categories in the file: gfx): this looks like a Chrome trace from another tool",
        ),
        (
            _doc([{"ph": "X", "cat": "cpu_op", "name": "a", "ts": "soon", "pid": 1, "tid": 1}]),
            "none of the 1 events is usable (1 with a 'ts' that is not a number or not an object)",
        ),
        (
            _doc([{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1e300, "pid": 1, "tid": 1}]),
            "none of the 1 events is usable (1 with a 'ts' out of range)",
        ),
        (b'{"schema": "1.0.3-chakra.0.0.4", "pid": 1, "nodes": []}', "a PyTorch execution trace"),
    ],
)
def test_errors_name_what_they_could_not_use(data, problem):
    with pytest.raises(TraceError) as e:
        parse_trace_bytes(data, "x.json")
    assert problem in str(e.value) and "\n" not in str(e.value)


def test_trace_error_crosses_a_process_boundary():
    e = pickle.loads(pickle.dumps(TraceError("r.json", "empty file")))
    assert isinstance(e, TraceError) and str(e) == "r.json: empty file" and e.problem == "empty file"


# -- HTA file naming and --ranks ---------------------------------------------------------------------------------


def _rank_trace(rank: int, work_us: float) -> bytes:
    tb = TraceBuilder()
    for i in range(2):
        t = i * 2000
        tb.step(i + 1, ts=t, dur=work_us + 100)
        ext = tb.op("aten::mm", t + 10, 20)
        tb.kernel("gemm", ts=t + 40, dur=work_us, launch_ts=t + 15, ext=ext)
    return tb.to_bytes(distributedInfo={"backend": "nccl", "rank": rank, "world_size": 128})


def _hta_folder(root: Path, bad: bool) -> Path:
    for r, work in ((0, 1000.0), (1, 1000.0)):
        (root / f"rank-{r}.json.gz").write_bytes(gzip.compress(_rank_trace(r, work)))
    if bad:
        (root / "rank-2.json.gz").write_bytes(gzip.compress(b'{"traceEvents": ['))
    (root / "notes.json").write_text("{}")  # not named like a trace: not one
    return root


def test_hta_rank_files_are_traces(tmp_path):
    found = list_traces(_hta_folder(tmp_path, bad=False))
    assert sorted(t.worker for t in found) == ["rank-0", "rank-1"]
    t = load_trace(tmp_path, worker="rank-1")
    assert t.worker == "rank-1" and t.metadata["distributedInfo"]["rank"] == 1


@pytest.mark.slow
def test_ranks_reports_a_bad_rank_in_one_line_and_compares_the_rest(run_cli, tmp_path):
    _hta_folder(tmp_path, bad=True)
    r = run_cli("analyze", "--ranks", "--json", tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (
        doc["ranks_compared"] == 2
        and doc["world_size"] == 128
        and [x["rank"] for x in doc["ranks"]] == [0, 1]
    )
    assert doc["failed"] == [
        f"{tmp_path / 'rank-2.json.gz'}: invalid or truncated JSON (Input data was truncated)"
    ]
    text = run_cli("analyze", "--ranks", tmp_path)
    assert text.returncode == 0 and "2 ranks compared of world size 128" in text.stdout
    assert "skipped a rank:" in text.stdout and "BrokenProcessPool" not in text.stdout + text.stderr


@pytest.mark.slow
def test_ranks_with_one_good_rank_is_a_one_line_error(run_cli, tmp_path):
    (tmp_path / "rank-0.json.gz").write_bytes(gzip.compress(_rank_trace(0, 1000.0)))
    (tmp_path / "rank-1.json.gz").write_bytes(b"")
    r = run_cli("analyze", "--ranks", tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "1 of 2 rank traces could be analysed" in r.stderr and "rank-1.json.gz: empty file" in r.stderr


# -- the peers' published traces (when a copy is present) --------------------------------------------------------

CORPUS = os.environ.get("IDLEHOUND_CORPUS")
needs_corpus = pytest.mark.skipif(
    not CORPUS,
    reason="IDLEHOUND_CORPUS is not set (a copy of HTA tests/data and "
    "kineto tb_plugin samples/test; see docs/compatibility.md)",
)


@pytest.fixture(scope="module")
def corpus():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "compat_corpus", Path(__file__).parents[1] / "benchmarks" / "compat_corpus.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    root = Path(CORPUS)
    return mod, root, {p: mod.run_one(p) for p in mod.trace_files(root)}


@needs_corpus
def test_every_corpus_file_loads_or_gets_a_true_one_line_error(corpus):
    _, _, results = corpus
    assert results
    for p, (status, msg, _) in results.items():
        assert status in (0, 2), f"{p}: {msg}"
        if status == 2:  # only a file that is not a Kineto trace may be refused
            assert "\n" not in msg and "execution trace" in msg, f"{p}: {msg}"


@needs_corpus
def test_resnet50_samples_match_the_tensorboard_plugin(corpus):
    mod, root, results = corpus
    expected = mod.plugin_expected(root)
    if not expected:
        pytest.skip("no tb_plugin/test/result_check_file.txt in the corpus")
    docs = {p: d for p, (_, _, d) in results.items() if d}
    assert mod.check_plugin(root, docs, 1.0) == []
    nw0 = docs[mod.span1(root, "resnet50_num_workers_0")]
    assert nw0["metrics"]["dataloader_pct"]["value"] == pytest.approx(33.37, abs=0.01)


def test_recorded_torch231_trace_reads_like_its_raw_events():
    """A CPU trace recorded with torch 2.3.1 (benchmarks/record_cpu_trace.py): epoch µs, no baseTimeNanoseconds."""
    path = next((TRACES / "torch231_cpu").glob("*.pt.trace.json.gz"))
    raw = json.loads(gzip.decompress(path.read_bytes()))
    assert "baseTimeNanoseconds" not in raw
    timed = [e for e in raw["traceEvents"] if e.get("ph") != "M"]
    first = min(e["ts"] for e in timed)
    steps = {e["name"]: (e["ts"], e["ts"] + e["dur"]) for e in timed if e["name"].startswith("ProfilerStep#")}
    loading = sum(
        e["dur"]
        for e in timed
        if e["name"].startswith("enumerate(DataLoader)#")
        and any(lo <= e["ts"] < hi for lo, hi in steps.values())
    )
    res = analyze_path(path)
    a = res.analysis
    assert a.trace.metadata["baseTimeNanoseconds"] == first * 1000
    assert [f"ProfilerStep#{s.number}" for s in a.steps] == sorted(steps)
    assert a.window_ns == sum(hi - lo for lo, hi in steps.values()) * 1000
    assert a.breakdown_ns["DataLoader"] == loading * 1000
    assert sum(a.breakdown_ns.values()) == a.window_ns
    assert [f.cause for f in res.findings] == ["data_loading"]
