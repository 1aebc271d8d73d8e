"""Scalar summaries read back with TensorBoard's own event reader."""

import sys

import pytest

pytest.importorskip("tensorboard")

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

from idlehound.pipeline import analyze_path  # noqa: E402
from idlehound.report.tensorboard import scalars_of, write_ladder_scalars, write_scalars  # noqa: E402

from .conftest import TRACES  # noqa: E402


def read(folder):
    acc = EventAccumulator(str(folder))
    acc.Reload()
    return acc


def test_run_scalars_round_trip(tmp_path):
    doc = analyze_path(TRACES / "dataloader_bound").doc
    assert write_scalars(tmp_path, scalars_of(doc)) is None
    acc = read(tmp_path)
    util = acc.Scalars("idlehound/gpu_util")
    assert util[0].value == pytest.approx(doc["metrics"]["gpu_util"]["value"], rel=1e-6)
    share = acc.Scalars("breakdown_pct/DataLoader")[0].value
    assert share == pytest.approx(
        100 * doc["breakdown_ms"]["DataLoader"] / doc["metrics"]["step_ms"]["value"], rel=1e-5
    )
    assert acc.Scalars("run/profiler_overhead")[0].value == pytest.approx(
        doc["run"]["profiler_overhead"], rel=1e-6
    )


def test_ladder_scalars_one_point_per_rung(tmp_path):
    from idlehound.ladder import RungResult, ladder_doc

    rungs = [
        RungResult("baseline", "baseline", samples_per_s=580.0, ms_per_step=55.0, speedup=1.0),
        RungResult("amp", "amp", samples_per_s=2800.0, ms_per_step=45.0, speedup=4.8),
        RungResult("compile", "compile", status="failed"),
    ]
    write_ladder_scalars(tmp_path, ladder_doc(rungs, "cpu"))
    pts = read(tmp_path).Scalars("ladder/samples_per_s")
    assert [(p.step, p.value) for p in pts] == [(0, 580.0), (1, 2800.0)]


def test_without_tensorboard_the_run_reports_say_why_no_scalars_were_written(tmp_path, monkeypatch, capsys):
    import json
    import shutil

    from idlehound.app._after import analyze_run
    from idlehound.report.tensorboard import NOT_INSTALLED

    run = tmp_path / "run"
    shutil.copytree(TRACES / "dataloader_bound", run)
    for name in [n for n in sys.modules if n.split(".")[0] == "tensorboard"] + ["tensorboard"]:
        monkeypatch.setitem(
            sys.modules, name, None
        )  # importing it, or any of its modules, raises ImportError
    res = analyze_run(run, print_report=False, html=False)
    assert res is not None and NOT_INSTALLED in res.analysis.notes
    assert NOT_INSTALLED in json.loads((run / "report.json").read_text())["notes"]
    assert not list(run.glob("events.out.tfevents.*"))
    assert "tensorboard" not in capsys.readouterr().err  # said once, in the reports
