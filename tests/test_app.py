"""The seam between capture and the layers above it: capture calls back only through the hook it is given."""

from __future__ import annotations

import pytest

from idlehound.capture import profile

from .conftest import needs

# In-process captures: the first starts torch's profiler (seconds on the 2-core host, after importing torch).
pytestmark = [pytest.mark.slow, needs("torch")]


def _train(p, steps: int = 6) -> None:
    import torch

    model = torch.nn.Linear(8, 2)
    for _ in range(steps):
        model(torch.randn(4, 8)).sum().backward()
        p.step()


def test_capture_hands_the_run_folder_to_its_hook_and_keeps_the_answer(tmp_path):
    calls = []
    with profile(
        logdir=tmp_path,
        run_name="hook",
        skip=1,
        warmup=1,
        active=2,
        progress=False,
        on_finish=lambda run_dir, print_report: calls.append((run_dir, print_report)) or "analysed",
    ) as p:
        _train(p)
    assert calls == [(p.run_dir, True)] and p.result == "analysed"
    assert not (
        p.run_dir / "report.json"
    ).exists()  # the hook did not write one, and capture writes none itself


def test_without_a_hook_capture_writes_the_run_folder_only(tmp_path):
    with profile(logdir=tmp_path, run_name="plain", skip=1, warmup=1, active=2, progress=False) as p:
        _train(p)
    names = {f.name for f in p.run_dir.iterdir()}
    assert p.result is None and "run.json" in names and any(n.endswith(".pt.trace.json.gz") for n in names)
    assert not {"report.json", "report.md", "report.html"} & names
