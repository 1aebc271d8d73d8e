"""Exact figures on traces built in code."""

import pytest

from idlehound import analyze, diagnose
from idlehound.analysis import _observer as observer
from idlehound.analysis._replay import LOADER_READY_NS
from idlehound.trace import parse_trace_bytes

from .tracebuilder import TraceBuilder


def analyse(tb: TraceBuilder, **top):
    a = analyze(parse_trace_bytes(tb.to_bytes(**top), "built.json"))
    return a, list(diagnose(a).findings)


def test_gpu_bound_job_with_cpu_running_ahead_reads_fully_busy():
    tb = TraceBuilder()
    # Host enqueues each step in 100 µs; the GPU needs 1000 µs per step and runs behind.
    for i in range(3):
        tb.step(i, ts=i * 100, dur=100)
        tb.kernel("gemm_bf16", ts=15 + i * 1000, dur=1000, launch_ts=i * 100 + 10)
    a, findings = analyse(tb)
    assert a.n_steps == 3
    assert a.gpu_busy_pct == pytest.approx(100 * 3000 / 3015)
    assert findings == []


def test_gpu_user_annotation_copies_are_not_steps_and_breakdown_sums_to_step():
    tb = TraceBuilder()
    for i in range(2):
        t0 = i * 1000
        tb.step(i, ts=t0, dur=1000)
        tb.dataloader(t0 + 0, 600)
        tb.kernel("k", ts=t0 + 700, dur=200, launch_ts=t0 + 650)
    a, _ = analyse(tb)
    assert [s.number for s in a.steps] == [0, 1]
    for s in a.steps:
        assert sum(s.breakdown_ns.values()) == s.duration_ns
        assert s.breakdown_ns["Kernel"] == 200_000
        assert s.breakdown_ns["DataLoader"] == 600_000
    assert a.gpu_busy_pct == pytest.approx(20.0)


def test_data_loading_idle_is_measured_and_reported_first(monkeypatch):
    # the model's hand-computed gain: no observer correction (a bare trace now gets the prior, docs/metrics.md)
    monkeypatch.setattr(observer, "load_prior", lambda: None)
    tb = TraceBuilder()
    for i in range(3):
        t0 = i * 1000
        tb.step(i, ts=t0, dur=1000)
        tb.dataloader(t0, 700)
        tb.kernel("k", ts=t0 + 750, dur=250, launch_ts=t0 + 710)
    a, findings = analyse(tb)
    assert a.idle_ns["data_loading"] == 3 * 700_000
    assert findings[0].cause == "data_loading"
    # Recoverable is the replay's gain: the 0.7 ms wait becomes the cost of taking a ready batch.
    assert findings[0].recoverable_ms == pytest.approx(0.7 - LOADER_READY_NS / 1e6, abs=0.005)
    assert "num_workers=" in findings[0].code


def test_sync_drains_queue_and_following_host_work_is_charged_to_it():
    tb = TraceBuilder()
    for i in range(2):
        t0 = i * 2000
        tb.step(i, ts=t0, dur=2000)
        ext = tb.op("aten::mm", t0, 50)
        tb.kernel("gemm_bf16", ts=t0 + 60, dur=1000, launch_ts=t0 + 10, ext=ext)
        item = tb.op("aten::_local_scalar_dense", t0 + 100, 970)
        tb.runtime("cudaMemcpyAsync", t0 + 110, 5, ext=item)
        tb.runtime("cudaStreamSynchronize", t0 + 120, 945, ext=item)  # waits until the kernel ends at +1060
        tb.op("aten::add", t0 + 1100, 800)  # host work after the sync, GPU idle meanwhile
        ext2 = tb.op("aten::relu", t0 + 1900, 50)
        tb.kernel("relu", ts=t0 + 1960, dur=30, launch_ts=t0 + 1910, ext=ext2)
    a, findings = analyse(tb)
    site = next(s for s in a.sync_sites if s.kind == "scalar_read")
    assert site.count == 2
    # Gap from 1060 to 1960 per step: all of it is charged to the sync.
    assert site.idle_after_ns == 2 * 900_000
    assert findings[0].cause == "sync"


def test_sync_while_gpu_already_idle_costs_nothing():
    tb = TraceBuilder()
    for i in range(2):
        t0 = i * 2000
        tb.step(i, ts=t0, dur=2000)
        ext = tb.op("aten::mm", t0, 50)
        tb.kernel("gemm_bf16", ts=t0 + 60, dur=1900, launch_ts=t0 + 10, ext=ext)
        item = tb.op("aten::_local_scalar_dense", t0 + 1970, 25)  # after the GPU finished: no drain
        tb.runtime("cudaStreamSynchronize", t0 + 1975, 5, ext=item)
    a, findings = analyse(tb)
    assert all(s.idle_after_ns == 0 for s in a.sync_sites)
    assert [f.cause for f in findings] == []


def test_cupti_failure_is_said_plainly_and_not_reported_as_idle():
    tb = TraceBuilder()
    tb.events = [e for e in tb.events if e["cat"] != "kernel"]
    for i in range(2):
        tb.step(i, ts=i * 100, dur=100)
        tb.op("aten::mm", i * 100 + 10, 50)
    tb.events = [e for e in tb.events if e["cat"] not in ("gpu_user_annotation",)]
    a, findings = analyse(tb)
    assert a.gpu_recorded is False
    assert a.gpu_busy_pct is None
    assert any("CUPTI" in n for n in a.notes)


def test_no_profiler_steps_whole_trace_is_one_step():
    tb = TraceBuilder(cuda=False)
    tb.op("aten::mm", 0, 100)
    tb.op("aten::add", 150, 50)
    a, _ = analyse(tb)
    assert a.step_source == "whole trace"
    assert a.steps[0].duration_ns == 200_000
    assert any("no ProfilerStep" in n for n in a.notes)


def test_timestamps_keep_nanosecond_precision():
    tb = TraceBuilder(cuda=False)
    tb.step(1, ts=5_376_500_174_844.338, dur=0.001)
    a, _ = analyse(tb)
    assert a.steps[0].start_ns == 5_376_500_174_844_338
    assert a.steps[0].duration_ns == 1


def test_negative_and_missing_durations_count_as_zero_with_a_note():
    tb = TraceBuilder(cuda=False)
    tb.step(1, ts=0, dur=100)
    tb.op("aten::mm", 10, -5)
    e = tb.op("aten::add", 20, 10)
    del next(x for x in tb.events if x["args"].get("External id") == e)["dur"]
    a, _ = analyse(tb)
    assert any("negative duration" in n for n in a.notes)
    assert a.steps[0].duration_ns == 100_000


def test_pageable_copies_found_with_their_bytes():
    tb = TraceBuilder()
    for i in range(2):
        t0 = i * 3000
        tb.step(i, ts=t0, dur=3000)
        copy = tb.op("aten::copy_", t0, 2100)
        tb.memcpy(
            "HtoD (Pageable -> Device)",
            t0 + 100,
            2000,
            64 << 20,
            launch_ts=t0 + 10,
            launch_dur=2000,
            ext=copy,
        )
        tb.runtime("cudaStreamSynchronize", t0 + 2015, 90, ext=copy)
        tb.op("aten::foo", t0 + 2110, 500)
        ext = tb.op("aten::mm", t0 + 2610, 50)
        tb.kernel("gemm_bf16", ts=t0 + 2700, dur=290, launch_ts=t0 + 2620, ext=ext)
    a, findings = analyse(tb)
    h2d = a.copies["HtoD"]
    assert h2d.pageable_count == 2 and h2d.bytes == 2 * (64 << 20)
    assert findings[0].cause == "pageable_copy"


def test_launch_bound_tiny_kernels():
    tb = TraceBuilder()
    t = 0.0
    for i in range(2):
        tb.step(i, ts=t, dur=400 * 20)
        for _ in range(400):
            ext = tb.op("aten::mul", t, 18)
            tb.kernel(
                "vectorized_elementwise_kernel", ts=t + 17, dur=2, launch_ts=t + 8, launch_dur=8, ext=ext
            )
            t += 20
    a, findings = analyse(tb)
    assert a.kernels.shorter_than_launch == 1.0
    assert findings[0].cause == "launch_bound"
    assert a.gpu_busy_pct == pytest.approx(10.0, abs=0.5)


def test_fp32_gemm_without_tensor_cores_is_a_finding():
    tb = TraceBuilder()
    for i in range(2):
        t0 = i * 1000
        tb.step(i, ts=t0, dur=50)
        ext = tb.op("aten::mm", t0, 40, types=["float", "float"])
        tb.kernel(
            "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_ffma",
            ts=t0 + 45,
            dur=950,
            launch_ts=t0 + 5,
            ext=ext,
        )
    a, findings = analyse(tb)
    assert a.kernels.fp32_matmul_ops == ["aten::mm"]
    assert findings[0].cause == "fp32_math"
    assert findings[0].kind == "slow"


def test_shortened_file_names_keep_exact_line_without_reading_the_file(tmp_path):
    from idlehound.analysis import SourceMap

    (tmp_path / "train.py").write_text("x = 1\n" * 30)
    tb = TraceBuilder(cuda=False)
    tb.step(1, 0, 100)
    root = tb.python("train.py(10): main", 0, 100)
    tb.python("<built-in method item of Tensor object at 0x7f00>", 20, 5, parent=root)
    ev = parse_trace_bytes(tb.to_bytes(), "t.json").events
    start_ns = 20_000
    sidecar = {
        "callers": {
            (start_ns, "<built-in method item of Tensor object at 0x7f00>"): ("train.py", 17, "main")
        },
        "sys_path": [str(tmp_path)],
        "script": None,
    }
    smap = SourceMap(ev, sidecar)
    import numpy as np

    (loc,) = smap.locate(np.array([1]), np.array([22_000]))
    assert (loc.file, loc.line, loc.exact) == ("train.py", 17, True)
    assert (
        "snippet" not in loc.to_json() and "path" not in loc.to_json()
    )  # the file exists, but is never read
    (outer,) = smap.locate(np.array([1]), np.array([50_000]))
    assert (outer.line, outer.exact) == (10, False)


def test_nccl_communication_exposed_and_overlapped():
    tb = TraceBuilder()
    for i in range(2):
        t0 = i * 1000
        tb.step(i, ts=t0, dur=1000)
        ext = tb.op("aten::mm", t0, 20)
        tb.kernel("gemm_bf16", ts=t0 + 100, dur=500, launch_ts=t0 + 5, ext=ext)
        comm = tb.op("nccl:all_reduce", t0 + 30, 20)
        tb.kernel(
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
            ts=t0 + 400,
            dur=400,
            launch_ts=t0 + 35,
            ext=comm,
            stream=20,
        )
    a, _ = analyse(tb)
    # per step: collectives [30,50) on the host and [400,800) on the GPU; compute [100,600) hides 200 of it
    assert a.ranks["comm_ms"] == pytest.approx(0.42)
    assert a.ranks["exposed_comm_ms"] == pytest.approx(0.22)
    assert a.steps[0].breakdown_ns["Communication"] == 200_000 + 20_000
