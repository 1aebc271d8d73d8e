"""The run-folder module: the one place that knows the layout (names, ranks, run.json and samples.json)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from idlehound.errors import TraceError
from idlehound.runfolder import (
    document_files,
    match_trace,
    rank_of,
    read_run_info,
    run_file,
    run_info_rank,
    sidecar_path,
    update_run_json,
    worker_name,
    write_run_file,
)
from idlehound.trace import list_traces

HEALTHY = Path(__file__).parent / "traces" / "healthy"


@pytest.mark.parametrize(
    ("worker", "rank"),
    [
        ("rank0_host_123", 0),
        ("rank12_gpu-node-3_99", 12),  # as capture names a rank's worker
        ("rank-0", 0),
        ("rank1", 1),
        ("inference_rank_3", 3),
        ("RANK_2", 2),  # as HTA users name trace files
        ("host_123", None),
        ("frank2_host", None),
        ("rankless", None),
    ],
)
def test_the_rank_in_a_worker_name(worker, rank):
    assert rank_of(worker) == rank


def test_a_rank_worker_name_reads_back_its_rank():
    assert rank_of(worker_name("host_7", "5")) == 5 and worker_name("host_7", None) == "host_7"


def test_trace_names_of_both_conventions_are_matched():
    m = match_trace("rank0_host_1.1700000000123.pt.trace.json.gz")
    assert (m["worker"], m["stamp"]) == ("rank0_host_1", "1700000000123")
    assert match_trace("inference_rank_0.json.gz")["worker"] == "inference_rank_0"
    assert match_trace("run.json") is None and match_trace("report.json") is None


def test_the_recorded_folder_is_read_through_it():
    (trace,) = list_traces(HEALTHY)
    assert sidecar_path(trace.path).is_file()  # the capture's sidecar beside the recorded trace
    info = read_run_info(HEALTHY)
    assert info["idlehound_run"] == 1 and info["utilization_curve"]["samples"]
    assert (
        info["utilization_curve"]["samples"] == json.loads((HEALTHY / "samples.json").read_text())["samples"]
    )


def test_a_rank_reads_its_own_run_file_only_when_it_is_there(tmp_path):
    write_run_file(tmp_path, None, "run", {"idlehound_run": 1, "nproc": 2})
    assert run_info_rank(tmp_path, "rank1_host_9") is None  # no run.rank1.json: the folder's run.json
    write_run_file(tmp_path, 1, "run", {"idlehound_run": 1, "rank": 1, "steps_seen": 7})
    assert run_file(tmp_path, 1).name == "run.rank1.json"
    assert run_info_rank(tmp_path, "rank1_host_9") == 1
    assert read_run_info(tmp_path, 1)["steps_seen"] == 7


def test_update_completes_the_launchers_run_json(tmp_path):
    update_run_json(tmp_path, world_size=2)  # no run.json: nothing is created
    assert not run_file(tmp_path, None).exists()
    write_run_file(tmp_path, None, "run", {"idlehound_run": 1, "status": "done"})
    update_run_json(tmp_path, world_size=2, straggler=1)
    assert json.loads(run_file(tmp_path, None).read_text()) == {
        "idlehound_run": 1,
        "status": "done",
        "world_size": 2,
        "straggler": 1,
    }


def test_a_bad_run_json_names_the_file(tmp_path):
    shutil.copy(HEALTHY / "run.json", tmp_path / "run.json")
    info = json.loads((tmp_path / "run.json").read_text())
    info["steps_seen"] = "many"
    (tmp_path / "run.json").write_text(json.dumps(info))
    with pytest.raises(TraceError, match=r"run\.json: 'steps_seen' must be an integer"):
        read_run_info(tmp_path)


def test_document_files_of_a_folder(tmp_path):
    assert [p.name for p in document_files(tmp_path, "tune")] == ["tune.json", "tune.md", "tune.html"]
