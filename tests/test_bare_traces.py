"""The recorded H200 run folders analysed as bare traces (run.json removed), corrected by the profiler-cost prior
(docs/metrics.md, Replay: "Which correction", "Intervals"; issue 30). Their run.json holds what a bare trace lacks:
the unprofiled steps, and the A/B truths beside them hold the measured gains. benchmarks/bare_traces.py prints the
hit rates, in-sample and leave-one-out.
"""

import json
import shutil

import numpy as np
import pytest

from idlehound.diagnose._predict import gain_range
from idlehound.pipeline import analyze_path

from .conftest import TRACES
from .test_replay_h200 import interval

pytestmark = pytest.mark.slow  # analyses eight recorded loops twice (seconds)

FOLDERS = sorted(
    str(p.parent.relative_to(TRACES))
    for sub in ("replay", "frameworks_h200")  # the recorded H200 loops with truths (not watch/, ranks/)
    for p in (TRACES / sub).glob("*/run.json")
    if json.loads(p.read_text()).get("step_ms_before_window")
)
TRUTHS = {
    f"{sub}/{loop}": t
    for sub in ("replay", "frameworks_h200")
    for loop, t in json.loads((TRACES / sub / "truths.json").read_text()).items()
    if not loop.startswith("_")
}
ROWS = [
    pytest.param(
        name,
        fix,
        marks=[
            pytest.mark.xfail(reason="the stack assumes no loader wait remains (replay-h200.md)", strict=True)
        ]
        if (name, fix) == ("replay/burst_loader", "data_loading+launch_bound")
        else [],
    )
    for name, t in sorted(TRUTHS.items())
    for fix in t
    if not fix.startswith("base") and fix != "fix"
]


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    """name -> (the analysis with run.json, the analysis of the same trace file alone)."""
    out = {}
    for name in FOLDERS:
        d = tmp_path_factory.mktemp("bare") / name.replace("/", "_")
        d.mkdir()
        # the trace alone: no run.json, samples or sidecar
        for trace in (TRACES / name).glob("*.pt.trace.json*"):
            shutil.copy(trace, d / trace.name)
        out[name] = (analyze_path(TRACES / name), analyze_path(d))
    return out


def test_the_folders_are_the_recorded_h200_loops():
    assert len(FOLDERS) == 8 and "frameworks_h200/hf_trainer" in FOLDERS


@pytest.mark.parametrize("name", FOLDERS)
def test_a_bare_trace_uses_the_prior_and_its_step_range_holds_the_unprofiled_step(pairs, name):
    run, bare = pairs[name]
    obs, bobs = run.analysis.observer, bare.analysis.observer
    assert bobs["correction"].startswith("prior from ") and "unprofiled_ms" not in bobs
    lo, hi = bobs["predicted_range_ms"]
    assert lo * 0.999 <= obs["unprofiled_ms"] <= hi * 1.001, (lo, obs["unprofiled_ms"], hi)
    assert any(bobs["correction"] in n for n in bare.analysis.notes)


@pytest.mark.parametrize("name", FOLDERS)
def test_the_first_named_fix_is_the_same_bare(pairs, name):
    run, bare = pairs[name]
    assert [str(f.cause) for f in bare.findings[:1]] == [str(f.cause) for f in run.findings[:1]]


@pytest.mark.parametrize("name,fix", ROWS)
def test_the_bare_range_meets_the_ab_interval(pairs, name, fix):
    t = TRUTHS[name]
    base = np.array(t.get(f"base_{fix}", t["base"]))
    g = 1 - np.array(t[fix]) / base[: len(t[fix])]
    _, alo, ahi = interval(g)
    _, lo, hi = gain_range(pairs[name][1].analysis, fix.split("+"))
    assert lo <= ahi and alo <= hi, f"bare {lo:.1%}-{hi:.1%}, A/B [{alo:.1%}, {ahi:.1%}]"


def test_a_gpu_bound_trainers_sync_is_credited_only_with_the_idle_time_left(pairs):
    """HF Trainer on an H200 (35 ms of kernels, 72 ms unprofiled step): uncorrected, the bare trace credited the
    NaN/Inf-filter sync with 16%; the A/B of logging_nan_inf_filter=False measured ~5%."""
    run, bare = pairs["frameworks_h200/hf_trainer"]
    f = next(f for f in bare.findings if f.cause == "sync")
    lo, hi = f.share_ends
    assert f.share < 0.10 and lo <= 0.051 <= hi
    assert (
        bare.findings[0].cause == "sync" and len(bare.findings) == 1
    )  # launch-bound (17% uncorrected) is gone


def test_terminal_markdown_html_and_json_show_the_same_range(pairs):
    import io

    from rich.console import Console

    from idlehound.report import render, render_html, render_markdown

    buf = io.StringIO()
    render(doc := pairs["frameworks_h200/hf_trainer"][1].doc, Console(file=buf, width=400))

    f = doc["findings"][0]
    (lo, hi), (slo, shi) = f["recoverable_ms_range"], f["recoverable_share_range"]
    text = f"range {lo:.3f}-{hi:.3f} ms, {100 * slo:.1f}-{100 * shi:.1f}%"
    assert slo <= f["recoverable_share_of_step"] <= shi and slo < shi
    assert doc["replay"]["correction"] == "prior from 7 calibration loops"
    for out in (render_markdown(doc), render_html(doc), " ".join(buf.getvalue().split())):
        assert text in out


def test_a_point_outside_its_range_is_an_impossible_figure(pairs):
    import copy

    from idlehound.report import check_document

    doc = copy.deepcopy(pairs["frameworks_h200/hf_trainer"][1].doc)
    assert check_document(doc) == []
    f = doc["findings"][0]
    f["recoverable_ms_range"] = [f["recoverable_ms_per_step"] + 0.5, f["recoverable_ms_per_step"] + 1.0]
    (problem,) = check_document(doc)
    assert problem.startswith("findings.sync.recoverable_ms_per_step")
