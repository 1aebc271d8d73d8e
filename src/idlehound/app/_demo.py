"""`idlehound demo`: the blog's baseline (ResNet18, CIFAR10 at 224, batch 32, one worker, fp32) under capture."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from rich.console import Console

    from ..workloads.resnet import TrainConfig, Trainer


def run_demo(
    device: Optional[str] = None,
    data: Optional[Path] = None,
    logdir: Path = Path("log"),
    steps: Optional[int] = None,
    batch_size: Optional[int] = None,
    print_report: bool = True,
) -> tuple[Any, Optional[Path], dict[str, Any]]:
    """Train the baseline under idlehound.profile and return (result, run_dir, throughput)."""
    from ..workloads.resnet import Trainer, baseline, default_device
    from ._capture import profile

    device = device or default_device()
    cfg = baseline(device)
    if data is not None:
        cfg = replace(cfg, data=str(data))
    if batch_size:
        cfg = replace(cfg, batch_size=batch_size)
    gpu = device != "cpu"
    skip, warmup, active, total = _schedule(gpu, steps)
    trainer = Trainer(cfg)
    _announce(trainer, cfg, device)
    with profile(
        logdir=logdir,
        run_name="demo",
        skip=skip,
        warmup=warmup,
        active=active,
        step_on="manual",
        print_report=print_report,
    ) as p:
        session = p.session
        assert session is not None  # set on entering the block
        session.opts.extra["workload"] = {"name": "resnet18-cifar10", "config": cfg.to_json()}
        for _ in range(total):
            trainer.step()
            p.step()
        trainer.sync()
    timing = session.step_timing()
    if "unprofiled_step_ms" in timing:
        sps = cfg.batch_size / (timing["unprofiled_step_ms"] / 1e3)
        sys.stderr.write(
            f"idlehound demo: {sps:,.0f} samples/s outside the profiled window "
            f"({timing['unprofiled_step_ms']:.1f} ms per step)\n"
        )
    if not gpu and print_report and not _has_gpu():
        show_recorded()
    return p.result, p.run_dir, timing


def _schedule(gpu: bool, steps: Optional[int]) -> tuple[int, int, int, int]:
    """(skip, warm-up, active, total steps): the capture defaults on a GPU, fewer on a CPU (a step takes seconds)."""
    from ..capture import CaptureOptions as d

    skip, warmup, active = (d.skip, d.warmup, d.active) if gpu else (2, 1, 3)
    total = steps or (skip + warmup + active + (20 if gpu else 3))
    return skip, warmup, active, max(total, skip + warmup + active + 1)


def _announce(trainer: Trainer, cfg: TrainConfig, device: str) -> None:
    say = sys.stderr.write
    say(
        f"idlehound demo: ResNet18 on {'synthetic ' if trainer.synthetic else ''}CIFAR10 at {cfg.image_size}px, "
        f"batch {cfg.batch_size}, {cfg.num_workers} loader worker, fp32, on {device}\n"
    )
    if trainer.synthetic:
        say(
            "  data: synthetic CIFAR10 written in torchvision's on-disk format (give --data DIR for the real "
            "set); model: random weights (pretrained weights cannot be downloaded here)\n"
        )


# The same workload (ResNet18, CIFAR10 at 224, batch 32, one worker, fp32) recorded by `idlehound demo` on an H200;
# a copy of tests/traces/demo, shipped so that a machine without a GPU still sees what the tool finds on one.
RECORDED = Path(__file__).resolve().parent.parent / "data" / "demo_h200"


def _has_gpu() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def show_recorded(console: Optional[Console] = None) -> None:
    """Print the diagnosis of the recorded H200 run of the same workload, headed by why it is shown."""
    from rich.console import Console
    from rich.rule import Rule

    from ..pipeline import analyze_path
    from ..report import render

    c = console or Console()
    c.print()
    c.print(Rule("no GPU here; the same workload recorded on an H200:", style="bold yellow"))
    render(analyze_path(RECORDED).report, c)
    c.print(
        f"(recorded run folder: {RECORDED}; `idlehound analyze` or `idlehound report` read it like any other)",
        style="dim",
        soft_wrap=True,
    )
