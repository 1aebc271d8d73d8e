"""The framework callbacks and profile_steps on tiny CPU runs, and the same scripts under `idlehound run`.

Each live run takes ~15 s on a small CPU (importing the framework dominates).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, SCRIPTS, needs


@pytest.fixture
def run_cli(forked_cli):
    """Each `idlehound ...` run as a fork of one torch-loaded interpreter (tests/_forkserver.py)."""
    return forked_cli


pytestmark = [pytest.mark.slow, needs("torch")]  # framework training scripts in their own processes

FW = SCRIPTS / "frameworks"
WINDOW = ["--skip", "3", "--warmup", "1", "--active", "3"]


def script(name: str, *args, env=None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, str(FW / name), *map(str, args)],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def one_run(logdir: Path, prefix: str) -> Path:
    (run,) = [p for p in logdir.iterdir() if p.is_dir() and p.name.startswith(prefix)]
    return run


def check_run_folder(run: Path, steps: int) -> dict:
    """The layout `idlehound run` writes: one trace, its sidecar, run.json and the reports."""
    assert len(list(run.glob("*.pt.trace.json.gz"))) == 1 and len(list(run.glob("*.sidecar.json.gz"))) == 1
    info = json.loads((run / "run.json").read_text())
    assert info["status"] == "done" and info["schedule"]["active"] == steps
    report = json.loads((run / "report.json").read_text())
    assert report["metrics"]["step_ms"]["value"] > 0
    return report


def framework_entries(report: dict) -> set:
    return {m["entry"] for f in report["findings"] for m in f["details"].get("framework", [])}


def scalars(folder: Path) -> dict:
    """The last value of each TensorBoard scalar under folder (the test skips here without tensorboard)."""
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    out = {}
    for d in {p.parent for p in folder.rglob("events.out.tfevents.*")}:
        acc = ea.EventAccumulator(str(d))
        acc.Reload()
        out.update({tag: acc.Scalars(tag)[-1].value for tag in acc.Tags()["scalars"]})
    return out


def test_transformers_callback(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    r = script("hf_trainer.py", "on", "callback", tmp_path)
    assert r.returncode == 0, r.stderr
    run = one_run(tmp_path, "transformers-")
    report = check_run_folder(run, 3)
    assert "hf_nan_inf_filter" in framework_entries(report)
    assert "logging_nan_inf_filter=False" in r.stdout  # the printed analysis names the Trainer setting
    tb = scalars(tmp_path / "hf_out" / "runs" / "idlehound")  # beside the Trainer's own TensorBoard runs
    assert tb["idlehound/step_ms"] == pytest.approx(report["metrics"]["step_ms"]["value"], rel=1e-3)


def test_lightning_callback(tmp_path):
    pytest.importorskip("lightning")
    r = script("lightning_fit.py", "step", "callback", tmp_path)
    assert r.returncode == 0, r.stderr
    report = check_run_folder(one_run(tmp_path, "lightning-"), 3)
    assert "lightning_step_log" in framework_entries(report)
    tb = scalars(tmp_path / "pl_tb")  # trainer.logger got the headline figures
    assert tb["idlehound/step_ms"] == pytest.approx(report["metrics"]["step_ms"]["value"], rel=1e-3)


def test_profile_steps_in_accelerate_loop(tmp_path):
    pytest.importorskip("accelerate")
    r = script("accelerate_loop.py", "tensor", tmp_path)
    assert r.returncode == 0, r.stderr
    report = check_run_folder(one_run(tmp_path, "accelerate-"), 3)
    assert "tqdm_tensor_postfix" in framework_entries(report)
    tb = scalars(tmp_path / "accelerate_tb")  # accelerator.log received the figures
    assert tb["idlehound/step_ms"] == pytest.approx(report["metrics"]["step_ms"]["value"], rel=1e-3)


@pytest.mark.parametrize(
    "name,args,entry",
    [
        ("hf_trainer.py", ["on", "plain"], "hf_nan_inf_filter"),
        ("lightning_fit.py", ["step", "plain"], "lightning_step_log"),
    ],
)
def test_framework_scripts_under_idlehound_run(tmp_path, run_cli, name, args, entry):
    pytest.importorskip("transformers" if name.startswith("hf") else "lightning")
    r = run_cli("run", "--logdir", tmp_path, *WINDOW, FW / name, *args, tmp_path / "out")
    assert r.returncode == 0, r.stderr
    report = check_run_folder(one_run(tmp_path, Path(name).stem), 3)
    assert entry in framework_entries(report)


def _train(prof, steps: int) -> None:
    import torch

    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        loss = model(torch.randn(8, 16)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        prof.step()


def test_profile_steps_plain_loop_logs_headline_once(tmp_path):
    from idlehound.integrations import profile_steps

    logged = []
    with profile_steps(
        logdir=tmp_path,
        run_name="plain",
        skip=2,
        warmup=1,
        active=2,
        print_report=False,
        progress=False,
        log=lambda values, step: logged.append((values, step)),
    ) as prof:
        _train(prof, 8)
    report = check_run_folder(prof.run_dir, 2)
    ((values, step),) = logged
    assert step == 5  # logged as the window closed (skip + warmup + active), not when the loop ended
    assert values["idlehound/step_ms"] == report["metrics"]["step_ms"]["value"]
    assert prof.closed and prof.result is not None


def test_training_that_ends_inside_the_window_is_still_analysed(tmp_path):
    from idlehound.integrations import Window

    w = Window(
        logdir=tmp_path, run_name="short", skip=1, warmup=1, active=5, print_report=False, progress=False
    )
    w.start()
    _train(w, 4)  # the window wanted steps 2..6; training stopped after step 3
    assert not w.closed
    w.close()
    assert w.result is not None and list(w.run_dir.glob("*.pt.trace.json.gz"))
    assert json.loads((w.run_dir / "run.json").read_text())["steps_seen"] == 4
