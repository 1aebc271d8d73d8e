"""Traces recorded on an H200 (torch 2.11) with `idlehound run`, one per planted cause plus healthy controls.

Each must be diagnosed with its planted cause first, at the planted line where the trace knows it, and with
figures in the measured range. The scripts are in tests/scripts/planted; tests/device/record_traces.sh made them.
"""

import io

import pytest
from rich.console import Console

from idlehound.report.terminal import render

from .conftest import TRACES, analysed

PLANTED = {
    # name: (first cause, planted file suffix, planted line or None, GPU busy range %)
    "sync_item": ("sync", "sync_item.py", 17, (55, 85)),
    "dataloader_bound": ("data_loading", "resnet.py", 110, (5, 40)),
    "dataloader_workers": ("data_loading", "resnet.py", 110, (10, 50)),
    "pageable": ("pageable_copy", "pageable.py", 11, (85, 100)),
    "launch_bound": ("launch_bound", "launch_bound.py", None, (0, 20)),
    "fp32_math": (
        "fp32_math",
        "fp32_math.py",
        14,
        (95, 100),
    ),  # line 14: loss.backward(), the longest fp32 GEMMs
    "host_python": ("host_bound", "host_python.py", 25, (0, 15)),
    "cudnn_off": (
        "cudnn_benchmark",
        "cudnn_off.py",
        17,
        (90, 100),
    ),  # line 17: loss.backward() (wgrad/dgrad convs)
    "memory_churn": ("memory_churn", "memory_churn.py", 17, (35, 75)),
    "near_oom": ("near_oom", None, None, (95, 100)),
    "demo": ("data_loading", "resnet.py", 110, (15, 45)),
}


@pytest.fixture(scope="module")
def results():
    return {p.name: analysed(p) for p in sorted(TRACES.iterdir()) if p.is_dir()}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_planted_cause_is_named_first(results, name):
    cause, file_suffix, line, busy = PLANTED[name]
    res = results[name]
    assert res.findings, f"{name}: no finding"
    top = res.findings[0]
    assert top.cause == cause, [f.cause for f in res.findings]
    lo, hi = busy
    assert lo <= res.analysis.gpu_busy_pct <= hi
    if file_suffix:
        assert top.location is not None and top.location.file.endswith(file_suffix)
        assert top.location.exact, "recorded with a sidecar: the line must be exact"
    if line:
        assert top.location.line == line


@pytest.mark.parametrize("name", ["healthy", "item_gpu_bound"])
def test_healthy_controls_get_no_finding(results, name):
    res = results[name]
    assert res.findings == []
    assert res.analysis.gpu_busy_pct > 90
    assert "no significant idle time" in res.doc["headline"]


def test_sync_trace_names_print_and_item_lines(results):
    sites = results["sync_item"].doc["findings"][0]["details"]["sites"]
    lines = {(s["location"]["line"], s["kind"]) for s in sites if s["location"]}
    assert (17, "print_tensor") in lines  # print(loss)
    assert (16, "scalar_read") in lines  # loss.item()
    printed = next(s for s in sites if s["kind"] == "print_tensor")
    assert printed["count_per_step"] == pytest.approx(8.0)  # print() syncs eight times


def test_data_loading_advice_depends_on_workers(results):
    single = results["dataloader_bound"].findings[0]
    multi = results["dataloader_workers"].findings[0]
    assert "num_workers=0" in " ".join(single.evidence)
    assert "worker processes are in use (2)" in " ".join(multi.evidence)
    assert "GPU" in multi.fix and multi.fix != single.fix


def test_observer_effect_recorded_and_cuda_timed(results):
    run = results["sync_item"].analysis.run_info
    assert run["step_clock"] == "cuda_events"
    assert run["profiled_step_ms"] > run["unprofiled_step_ms"]


def test_terminal_and_json_show_the_same_numbers(results):
    for name in ("sync_item", "dataloader_bound", "healthy"):
        doc = results[name].doc
        buf = io.StringIO()
        render(doc, Console(file=buf, width=200, color_system=None))
        text = buf.getvalue()
        assert doc["headline"] in text
        assert f"{doc['metrics']['gpu_util']['value']:.1f} %" in text
        assert f"{doc['metrics']['step_ms']['value']:,.2f} ms" in text
        for f in doc["findings"]:
            assert f"{f['recoverable_ms_per_step']:.3f} ms per step" in text
        for v in doc["breakdown_ms"].values():
            if v:
                assert f"{v:.3f}" in text


def test_breakdown_parts_sum_to_the_step(results):
    for res in results.values():
        for s in res.analysis.steps:
            assert sum(s.breakdown_ns.values()) == s.duration_ns
