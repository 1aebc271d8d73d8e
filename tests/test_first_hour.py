"""What a new user meets first (issue 32): the demo's recorded GPU run, the unprofiled step, script errors, options."""

import io
import json
import shutil

import pytest
from rich.console import Console

from idlehound.app import misplaced_options, unknown_option
from idlehound.pipeline import analyze_path
from idlehound.report import render, render_markdown

from .conftest import ROOT, TRACES

PACKAGED = ROOT / "src" / "idlehound" / "data" / "demo_h200"
CPU_TRACE = next((TRACES / "torch231_cpu").glob("*.pt.trace.json.gz"))


def _terminal(doc, width=80):
    out = io.StringIO()
    render(doc, Console(file=out, width=width, color_system=None))
    return out.getvalue()


def test_the_packaged_demo_run_is_the_recorded_h200_demo_folder_file_for_file():
    shipped = sorted(p.name for p in PACKAGED.iterdir())
    assert shipped == sorted(p.name for p in (TRACES / "demo").iterdir())
    assert all((PACKAGED / n).read_bytes() == (TRACES / "demo" / n).read_bytes() for n in shipped)
    assert json.loads((PACKAGED / "run.json").read_text())["environment"]["gpu"] == "NVIDIA H200"
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"data/demo_h200/*"' in pyproject  # installed with the package, not only in the checkout


@pytest.mark.slow
def test_show_recorded_prints_the_gpu_diagnosis_under_its_heading():
    from idlehound.app._demo import show_recorded

    out = io.StringIO()
    show_recorded(Console(file=out, width=100, color_system=None))
    text = out.getvalue()
    head = text.index("no GPU here; the same workload recorded on an H200:")
    assert text.index("NVIDIA H200") > head
    assert "[HIGH] Data loading" in text and "resnet.py:110" in text  # test_recorded.PLANTED["demo"]


def test_the_unprofiled_step_from_run_json_is_printed_beside_the_profiled_one_in_every_renderer(tmp_path):
    steps_before = [50.0, 40.0, 30.0, 12.0, 11.0, 10.0]  # the first 3 warm up
    steps_after = [30.0, 9.0, 8.0]  # the first pays for the profiler's teardown
    shutil.copy(CPU_TRACE, tmp_path / CPU_TRACE.name)
    (tmp_path / "run.json").write_text(
        json.dumps(
            {
                "idlehound_run": 1,
                "status": "done",
                "step_ms_before_window": steps_before,
                "step_ms_after_window": steps_after,
                "unprofiled_step_ms": 11.0,
            }
        )
    )
    doc = analyze_path(tmp_path).doc
    expected = (12 + 11 + 10 + 9 + 8) / 5  # the steady steps' mean
    m = doc["metrics"]["unprofiled_step_ms"]
    assert m["value"] == pytest.approx(expected) and m["unit"] == "ms"
    profiled = doc["metrics"]["step_ms"]["value"]
    assert profiled > 30  # this recorded CPU trace: 34 ms a step under the profiler
    term = _terminal(doc)
    assert "Step time, unprofiled" in term and f"{expected:.2f} ms" in term
    assert f"({expected:.2f} ms without it)" in doc["headline"]
    assert f"| Step time, unprofiled | {expected:.2f} ms |" in render_markdown(doc)
    from idlehound.report import render_html

    assert f"{expected:.2f} ms" in render_html(doc)
    # without a run.json there is no figure, and no row
    bare = analyze_path(CPU_TRACE).doc
    assert bare["metrics"]["unprofiled_step_ms"]["value"] is None
    assert "unprofiled" not in _terminal(bare) and "without it" not in bare["headline"]


def test_a_mistyped_run_option_names_the_nearest_one():
    opts = ["--skip", "--warmup", "--active", "--step-on", "--logdir"]
    assert "did you mean --skip?" in unknown_option("--skp", opts)
    assert "did you mean --step-on?" in unknown_option("--step-of=x", opts)
    assert "did you mean" not in unknown_option("--zzzzzz", opts)


def test_an_idlehound_option_after_the_script_is_named_unless_the_script_defines_it(tmp_path):
    script = tmp_path / "train.py"
    script.write_text('import argparse\np = argparse.ArgumentParser()\np.add_argument("--steps")\n')
    opts = ["--skip", "--active", "--steps"]
    lines = misplaced_options(None, (str(script), "--skip", "3", "--steps", "4", "--active=2"), opts)
    assert len(lines) == 2 and lines[0].startswith("--skip comes after train.py") and "--active" in lines[1]
    assert misplaced_options(None, (str(script), "--steps", "4"), opts) == []  # its own option
    assert misplaced_options("pkg.mod", ("--skip", "3"), opts) == []  # a module: no source read


FAILING = """\
import sys
def inner():
    raise ValueError("bad value\\nsecond line of the message")
inner()
"""


@pytest.mark.slow
def test_a_failing_script_shows_its_own_traceback_and_one_summary_line(tmp_path, run_cli):
    (tmp_path / "fail.py").write_text(FAILING)
    r = run_cli("run", "--logdir", tmp_path / "log", "fail.py", cwd=tmp_path)
    assert r.returncode == 1
    tb = r.stderr[r.stderr.index("Traceback") :]
    frames = [ln.strip() for ln in tb.splitlines() if ln.strip().startswith("File ")]
    assert frames == ['File "fail.py", line 4, in <module>', 'File "fail.py", line 3, in inner']
    summary = [ln for ln in r.stderr.splitlines() if "no trace was captured" in ln]
    assert len(summary) == 1 and "(ValueError: bad value ...)" in summary[0]
    assert "run.json and samples.json were still written" in summary[0]
    (run,) = (tmp_path / "log").iterdir()
    assert json.loads((run / "run.json").read_text())["error"].endswith("second line of the message")


@pytest.mark.slow
def test_run_refuses_a_mistyped_option_before_the_script(tmp_path, run_cli):
    (tmp_path / "fail.py").write_text(FAILING)
    r = run_cli("run", "--skp", "3", "fail.py", cwd=tmp_path)
    assert r.returncode == 2 and "did you mean --skip?" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "log").exists()


def _compare(a="dataloader_bound", b="dataloader_workers"):
    from idlehound.compare import compare_model

    return compare_model(analyze_path(TRACES / a).report, analyze_path(TRACES / b).report)


@pytest.mark.slow  # two recorded traces analysed (about a second each)
def test_compare_in_the_terminal_is_a_table_with_units_and_says_which_side_is_better():
    from idlehound.report import render_compare, render_compare_html, render_compare_markdown

    c = _compare()
    out = io.StringIO()
    render_compare(c, Console(file=out, width=120, color_system=None))
    text = out.getvalue()
    assert "##" not in text and "|---" not in text  # not raw markdown
    step = next(r for r in c.metrics if r.label == "Step time")
    assert f"{step.a:,.2f} ms" in text and f"{step.b:,.2f} ms" in text  # the unit beside each figure
    from idlehound.report.compare import judgement

    # two loader workers: a shorter step and less data-loading idle time are better, not worse
    assert judgement("metrics", step) == "better" and step.b < step.a
    idle = next(r for r in c.idle_by_cause_ms if r.label == "data_loading")
    assert judgement("idle_by_cause_ms", idle) == "better"
    busy = next(r for r in c.metrics if r.label == "GPU busy")
    assert judgement("metrics", busy) == ("better" if busy.b > busy.a else "worse")
    assert "| B is |" in render_compare_markdown(c)
    page = render_compare_html(c)
    assert page.count("<rect") >= 4 and "class='n better'" in page and f"{step.b:,.2f} ms" in page


@pytest.mark.slow
def test_compare_leaves_out_an_empty_findings_section():
    from idlehound.report import render_compare, render_compare_markdown

    c = _compare("healthy", "healthy")
    assert not (c.findings_gone or c.findings_new or c.findings_kept)
    out = io.StringIO()
    render_compare(c, Console(file=out, width=120, color_system=None))
    assert "Findings" not in out.getvalue() and "## Findings" not in render_compare_markdown(c)


def test_html_utilisation_chart_has_its_axis_and_a_cpu_only_run_no_alarm_border():
    from idlehound.report import render_html
    from idlehound.report.html import COLORS

    page = render_html(analyze_path(TRACES / "demo").doc)
    curve = page[page.index("id='util-curve'") : page.index("</svg>", page.index("id='util-curve'"))]
    assert ">0 %<" in curve and ">50 %<" in curve and ">100 %<" in curve and curve.count("<line") == 5
    assert "class='headline'" in page  # a GPU run with findings: the red border
    cpu = render_html(analyze_path(CPU_TRACE).doc)
    assert "class='headline calm'" in cpu
    assert COLORS["sync"] != COLORS["data_loading"]
    red = int(COLORS["data_loading"][1:3], 16) - int(COLORS["sync"][1:3], 16)
    assert red > 100  # not another red: data loading is red, syncs are blue


@pytest.mark.slow  # imports torch and torchvision (the ResNet workload): seconds on the 2-core host
def test_ladder_labels_say_the_batch_measured_and_the_cpu_table_fits_80_columns():
    pytest.importorskip("torch")
    from idlehound.ladder import LADDER, RungResult, ladder_doc, measured_label
    from idlehound.report import render_ladder
    from idlehound.workloads.resnet import baseline

    cpu = baseline("cpu")
    rungs = {r.name: r for r in LADDER}
    assert "batch 128" in rungs["loader"].label  # written for a GPU
    tried = [{"batch_size": 8, "num_workers": w, "amp": None, "samples_per_s": 60.0 + w} for w in (1, 2)]
    label = measured_label(rungs["loader"].label, cpu, tried)
    assert (
        "batch 8" in label and "batch 128" not in label and "pinned" not in label
    )  # nothing pinned on a CPU
    assert measured_label(rungs["baseline"].label, cpu, []).startswith(f"0. baseline (batch {cpu.batch_size}")
    results = [
        RungResult(
            "baseline",
            measured_label(rungs["baseline"].label, cpu, []),
            samples_per_s=50.0,
            ms_per_step=160.0,
            speedup=1.0,
            top_finding="none",
        ),
        RungResult(
            "loader",
            label,
            samples_per_s=62.0,
            ms_per_step=129.0,
            speedup=1.24,
            top_finding="none",
            tried=tried,
        ),
    ] + [RungResult(n, rungs[n].label, status="skipped", reason="needs CUDA") for n in ("amp", "cuda_graphs")]
    out = io.StringIO()
    render_ladder(ladder_doc(results, "cpu"), Console(file=out, width=80, color_system=None))
    text = out.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    flat = " ".join(text.split())
    assert "{" not in text and "1 worker, batch 8: 61 samples/s; 2 workers, batch 8: 62 samples/s" in flat
    assert "skipped (needs CUDA): amp, cuda_graphs" in text and "NVML" not in text  # nothing measured there


EPOCHS = """\
import time

import torch

model = torch.nn.Linear(16, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.utils.data.TensorDataset(torch.randn(48, 16), torch.randint(0, 2, (48,)))
train = torch.utils.data.DataLoader(data, batch_size=8)
val = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(16, 16)), batch_size=8)
for epoch in range(3):
    for x, y in train:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(0.01)
    with torch.no_grad():
        for (x,) in val:  # evaluation between epochs: 0.6 s inside the step that spans the boundary
            model(x)
            time.sleep(0.3)
"""


@pytest.mark.slow
def test_a_step_that_spans_an_epoch_boundary_and_its_evaluation_is_left_out_of_the_mean(tmp_path, run_cli):
    (tmp_path / "epochs.py").write_text(EPOCHS)
    r = run_cli(
        "run", "--skip", "2", "--warmup", "1", "--active", "5", "--logdir", "log", "epochs.py", cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(next((tmp_path / "log").glob("*/report.json")).read_text())
    # 6 batches an epoch: profiled steps 4-8 hold the boundary after step 6 (steps count from 1)
    (note,) = [n for n in doc["notes"] if "new pass over a DataLoader" in n]
    left = int(note.split("step #")[1].split(" ")[0])
    assert left not in doc["trace"]["steps"] and len(doc["trace"]["steps"]) == 4
    assert all(s["duration_ms"] < 500 for s in doc["steps"])  # each kept step: no 0.6 s evaluation in it
    assert doc["metrics"]["step_ms"]["value"] < 500


def test_tune_counts_runs_and_says_what_a_verdict_means(capsys):
    from dataclasses import asdict

    from msgspec.structs import replace

    from idlehound.report.model import validate
    from idlehound.report.tune import prediction_line, verdict
    from idlehound.tune import print_progress
    from idlehound.tune._candidates import Outcome

    print_progress("baseline (2 warm-up + 4 timed steps)", 0, 0)
    print_progress("baseline (run 1)", 0, 0)
    print_progress("workers2 (run 1)", 2, 8)
    print_progress("diagnosing the baseline (short profile)", 2, 0)
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "idlehound tune: baseline (2 warm-up + 4 timed steps)",
        "idlehound tune: [run 1] baseline (run 1)",
        "idlehound tune: [run 3 of ~8] workers2 (run 1)",
        "idlehound tune: diagnosing the baseline (short profile)",
    ]
    reason = "bitwise equal: diverged at step 111: 2.30259 vs 2.30411"
    v = Outcome("workers2", "workers", status="rejected", reason=reason)
    assert verdict(asdict(v)) == (
        "rejected: the losses changed at step 111 (2.30259 as written, 2.30411 with the change; "
        "check: bitwise equal)"
    )
    wide = Outcome("bf16", "bf16", effect="no measurable effect", speedup=1.74, speedup_ci=[1.01, 3.02])
    assert verdict(asdict(wide)) == "not proven faster: interval 1.01–3.02×"
    flat = Outcome("bf16", "bf16", effect="no measurable effect", speedup=1.01, speedup_ci=[0.95, 1.09])
    assert verdict(asdict(flat)) == "no measurable effect"
    recorded = validate((ROOT / "docs" / "measurements" / "tune-h200-a.json").read_text(), "tune")
    doc = replace(recorded, schema_version=3, prediction={"available": False}, budget_s=300, wall_s=306.0)
    assert prediction_line(doc).endswith(
        "Budget 300 s, used 306 s (2% over: a run under way is finished, not cut)."
    )
    assert prediction_line(replace(doc, wall_s=250.0)).endswith("Budget 300 s, used 250 s.")
