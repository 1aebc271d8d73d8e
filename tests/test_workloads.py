"""The built-in workload on the CPU: synthetic CIFAR10 through torchvision, demo and ladder end to end."""

import json
import pickle
from importlib.util import find_spec

import pytest

from idlehound.workloads.cifar import cifar10, ensure_data, write_synthetic

from .conftest import needs


@pytest.fixture
def run_cli(forked_cli):
    """Each `idlehound ...` run as a fork of one torch-loaded interpreter (tests/_forkserver.py)."""
    return forked_cli


# torchvision is looked up, not imported: importing it costs seconds even where these tests are deselected.
pytestmark = [
    needs("torch"),
    pytest.mark.slow,
    pytest.mark.skipif(find_spec("torchvision") is None, reason="needs torchvision"),
]


def test_synthetic_cifar10_is_torchvision_format(tmp_path):
    root = write_synthetic(tmp_path, per_batch=40, test=20)
    with open(root / "cifar-10-batches-py" / "data_batch_1", "rb") as f:
        entry = pickle.load(f, encoding="latin1")
    assert entry["data"].shape == (40, 3072) and entry["data"].dtype.name == "uint8"
    train = cifar10(root, train=True, synthetic=True)
    test = cifar10(root, train=False, synthetic=True)
    assert len(train) == 200 and len(test) == 20
    img, label = train[0]
    assert img.size == (32, 32) and 0 <= label < 10
    assert train.classes[0] == "airplane"
    labels = {train[i][1] for i in range(200)}
    assert len(labels) > 5


def test_real_data_folder_is_used_when_present(tmp_path):
    write_synthetic(tmp_path, per_batch=10, test=10)
    root, synthetic = ensure_data(tmp_path)
    assert root == tmp_path and synthetic is False


def test_demo_runs_end_to_end_on_cpu(tmp_path, run_cli):
    r = run_cli(
        "demo", "--logdir", tmp_path / "log", "--steps", "8", env={"IDLEHOUND_CACHE": str(tmp_path / "c")}
    )
    assert r.returncode == 0, r.stderr
    assert "synthetic CIFAR10" in r.stderr and "random weights" in r.stderr
    assert "samples/s outside the profiled window" in r.stderr
    run = next((tmp_path / "log").iterdir())
    info = json.loads((run / "run.json").read_text())
    assert info["workload"]["config"]["batch_size"] == 8
    assert "Step time breakdown" in r.stdout
    import torch

    if not torch.cuda.is_available():  # after its own CPU run, the same workload's recorded H200 diagnosis
        recorded = r.stdout.index("no GPU here; the same workload recorded on an H200:")
        assert r.stdout.index("NVIDIA H200") > recorded and "resnet.py:110" in r.stdout[recorded:]


def test_ladder_tiny_on_cpu_reports_skips_with_reasons(tmp_path, run_cli):
    r = run_cli(
        "ladder",
        "--device",
        "cpu",
        "--rungs",
        "baseline,loader,amp,channels_last",
        "--steps",
        "3",
        "--warmup",
        "1",
        "--workers",
        "1",
        "--logdir",
        tmp_path / "log",
        "--json",
        env={"IDLEHOUND_CACHE": str(tmp_path / "c")},
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    rungs = {x["name"]: x for x in doc["rungs"]}
    assert rungs["baseline"]["status"] == "ok" and rungs["baseline"]["samples_per_s"] > 0
    assert rungs["baseline"]["speedup"] == 1.0
    assert rungs["loader"]["status"] == "ok" and rungs["loader"]["tried"][0]["num_workers"] == 1
    assert rungs["amp"]["status"] == "skipped" and rungs["amp"]["reason"] == "needs CUDA"
    assert rungs["ceiling"]["status"] == "skipped"
    folder = next((tmp_path / "log").iterdir())
    assert (folder / "ladder.md").exists() and (folder / "baseline").is_dir()
    assert "<svg id='ladder-chart'" in (folder / "ladder.html").read_text()
