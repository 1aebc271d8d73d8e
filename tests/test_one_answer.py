"""Ideas that used to be written several times now have one answer each: the loader worker count, a source
location as text, the fused optimizers, tensor-core kernels (by name, and by the op's dtype where the name
says nothing)."""

import pytest

from idlehound import analyze
from idlehound.analysis import SourceLoc, location_text
from idlehound.diagnose import Thresholds
from idlehound.diagnose.dataloader import suggested_workers, worker_sweep
from idlehound.ladder import LADDER, RUNGS, LadderOptions, _Skip
from idlehound.pipeline import analyze_path
from idlehound.trace import parse_trace_bytes

from .conftest import TRACES
from .unit.tracebuilder import TraceBuilder


@pytest.mark.parametrize("cores,n", [(1, 2), (4, 2), (16, 8), (24, 12), (64, 16)])
def test_suggested_workers_is_half_the_cores_from_2_to_16(cores, n):
    assert suggested_workers(cores) == n
    assert n in worker_sweep(cores)  # tune and ladder measure around the same suggestion


def test_diagnosis_code_suggests_the_worker_count_of_the_machine_that_ran_the_loop(monkeypatch):
    """The run folder records 16 cores; the analysing machine's count (here 24, on CI 2) plays no part: the same
    run folder gives the same fix on any machine."""
    from idlehound.diagnose import dataloader as dl

    monkeypatch.setattr(dl, "usable_cores", lambda: 24)
    res = analyze_path(TRACES / "dataloader_bound")  # num_workers=0: the fix starts workers
    assert res.analysis.run_info["environment"]["cpu_count"] == 16
    (f,) = [f for f in res.findings if f.cause == "data_loading"]
    assert suggested_workers(16) == 8 and "num_workers=8," in f.code


def test_location_text_is_the_same_from_a_location_and_from_its_json():
    exact = SourceLoc("train.py", 17, "main", True)
    approx = SourceLoc("train.py", 9, "main", False)
    assert str(exact) == location_text(exact.to_json()) == "train.py:17"
    assert str(approx) == location_text(approx.to_json()) == "train.py:9 (in main, def line)"
    assert location_text(approx, approx=False) == "train.py:9"
    assert location_text(None) == "(no user frame)"


def test_report_lines_use_the_location_text():
    from idlehound.report.markdown import render_markdown

    doc = analyze_path(TRACES / "sync_item").doc
    loc = doc["findings"][0]["location"]
    assert f"`{location_text(loc, approx=False)}`" in render_markdown(doc)


def test_fused_optimizers_are_one_constant():
    from idlehound.tune import _candidates, _changes

    assert _changes.FUSED_OPTIMIZERS is _candidates.FUSED_OPTIMIZERS == ("Adam", "AdamW", "SGD")


def test_thresholds_keep_only_fields_that_rules_read():
    from dataclasses import fields
    from pathlib import Path

    src = "\n".join(
        p.read_text() for p in Path(__import__("idlehound").__file__).parent.joinpath("diagnose").glob("*.py")
    )
    for f in fields(Thresholds):
        assert f"t.{f.name}" in src, f"Thresholds.{f.name} is read by no rule"


def test_ladder_rungs_are_objects_in_order_with_their_changes():
    assert RUNGS == ["baseline", "loader", "amp", "channels_last", "gpu_preprocess", "compile", "cuda_graphs"]
    assert all(r.change and r.label for r in LADDER)
    from idlehound.workloads.resnet import baseline

    best = baseline("cpu")
    by = {r.name: r for r in LADDER}
    cfg, tried = by["channels_last"].apply(best, LadderOptions(), "cuda")
    assert cfg.channels_last and cfg.cudnn_benchmark and tried == []
    with pytest.raises(_Skip, match="needs CUDA"):
        by["amp"].configure(best, LadderOptions(), "cpu")
    assert by["baseline"].configure(best, LadderOptions(), "cpu") == (best, [])


def _gemm_trace(types):
    tb = TraceBuilder()
    for i in range(2):
        t0 = i * 1000
        tb.step(i, ts=t0, dur=50)
        ext = tb.op("aten::mm", t0, 40, types=types)
        # a cuBLASLt-style name with no dtype in it: the name alone cannot tell the precision
        tb.kernel("cublasLt::gemm_kernel_sm90_tst_128x128", ts=t0 + 45, dur=900, launch_ts=t0 + 5, ext=ext)
    return analyze(parse_trace_bytes(tb.to_bytes(), "built.json"))


def test_tensor_cores_from_the_ops_dtype_when_the_kernel_name_does_not_tell():
    bf16 = _gemm_trace(["c10::BFloat16", "c10::BFloat16"])
    assert bf16.kernels.tensor_core_ns == 2 * 900_000
    assert bf16.kernels.top[0].precision == "tensor_core"
    fp32 = _gemm_trace(["float", "float"])  # fp32 may or may not use TF32: not counted either way
    assert fp32.kernels.tensor_core_ns == 0 and fp32.kernels.fp32_matmul_ns == 0
    assert fp32.kernels.top[0].precision == ""
