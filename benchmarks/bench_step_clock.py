"""Cost of the always-on step clock outside windows, interleaved A/B in one process (issue 34).

    python benchmarks/bench_step_clock.py [--kind small|resnet] [--rounds 15] [--block 200] [--out FILE.json]

Per round, in a rotating order, one block of `--block` steps of each:
  plain    the training step alone;
  clock    the step plus what the step clock and --watch's control poll add at every step outside a window
           (StepClock.tick: a CUDA event recorded and earlier ones queried, or the host clock; the loader timer is
           not exercised, the data is already on the device; Poller.poll: a clock read, a stat every 0.25 s);
  session  the step under a whole idlehound capture session with --watch whose first window is never reached
           (the session's own step bookkeeping, the clock, the control poll), one fresh session per block.
Each block is timed from a device sync to a device sync; the figures are medians over rounds of the mean step time
per block, and cost = median(mode) / median(plain) - 1; cost_pct_paired is the median over rounds of each round's
mode/plain ratio (its blocks run back to back, so slow drift of the machine cancels: use many short blocks).
Target (H200): <= 1% for `clock` on `small` (a launch-bound MLP, ~1 ms a step) and on `resnet` (ResNet-18, bf16,
batch 256: the demo's model at its tuned size).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from idlehound.capture import CaptureOptions, Session, WatchOptions  # noqa: E402
from idlehound.capture._clock import StepClock  # noqa: E402
from idlehound.capture._control import Poller  # noqa: E402


def workload(kind: str, dev: torch.device):
    if kind == "resnet":
        import torchvision

        cuda = dev.type == "cuda"
        batch, size = (256, 224) if cuda else (4, 32)
        model = torchvision.models.resnet18(num_classes=10).to(dev).to(memory_format=torch.channels_last)
        x = torch.randn(batch, 3, size, size, device=dev).contiguous(memory_format=torch.channels_last)
        y = torch.randint(0, 10, (batch,), device=dev)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
        torch.backends.cudnn.benchmark = True

        def step() -> None:
            with torch.autocast(dev.type, dtype=torch.bfloat16):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        return step
    layers: list[torch.nn.Module] = []
    for _ in range(8):
        layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
    mlp = torch.nn.Sequential(*layers).to(dev)
    xs = torch.randn(32, 256, device=dev)
    adam = torch.optim.Adam(mlp.parameters(), foreach=True)

    def small_step() -> None:
        loss = mlp(xs).square().mean()
        adam.zero_grad(set_to_none=True)
        loss.backward()
        adam.step()

    return small_step


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def block(mode: str, step, n: int, dev: torch.device, tmp: Path) -> float:
    """Mean ms per step of n steps in this mode."""
    session = clock = poller = None
    if mode in ("clock", "tick", "host"):
        cuda = dev.type == "cuda" and mode != "host"
        clock = StepClock(tmp / f"steps-{time.monotonic_ns()}.jsonl", cuda=cuda)
    if mode in ("clock", "poll"):
        poller = Poller(tmp)
    elif mode == "session":
        opts = CaptureOptions(
            logdir=tmp, skip=10**9, step_on="manual", sample_hz=0, progress=False, watch=WatchOptions()
        )
        session = Session(opts, "bench", ["bench"]).start()
    sync(dev)
    t0 = time.perf_counter()
    for i in range(n):
        step()
        if session is not None:
            session.step()
            continue
        now = time.monotonic()
        if clock is not None:
            clock.tick(i, now)
        if poller is not None:
            poller.poll(now)
    sync(dev)
    ms = (time.perf_counter() - t0) * 1e3 / n
    if clock is not None:
        clock.close()
    if session is not None:
        session.stop(0)
    return ms


def tick_us(dev: torch.device, tmp: Path, n: int = 20000) -> float:
    """Microseconds of host time one clock tick and control poll take, with no training step between them."""
    clock = StepClock(tmp / "ticks.jsonl", cuda=dev.type == "cuda")
    poller = Poller(tmp)
    t0 = time.perf_counter()
    for i in range(n):
        now = time.monotonic()
        clock.tick(i, now)
        poller.poll(now)
    us = (time.perf_counter() - t0) * 1e6 / n
    clock.close()
    return us


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", default="small", choices=["small", "resnet"])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--block", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--out", default="")
    ap.add_argument(
        "--modes",
        default="plain,clock,session",
        help="plain first; also: plain2 (plain again: the method's own bias), tick (the clock alone), "
        "poll (the control poll alone), host (the clock on the host clock, no CUDA events)",
    )
    a = ap.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    step = workload(a.kind, dev)
    modes = a.modes.split(",")
    if modes[0] != "plain" or len(set(modes)) != len(modes):  # costs are relative to the first mode
        ap.error(f"--modes: plain first, each mode once, not {a.modes!r}")
    times: dict[str, list[float]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (tmp / "control").mkdir()
        per_tick_us = tick_us(dev, tmp)
        for _ in range(a.warmup):
            step()
        for r in range(a.rounds):
            k = r % len(modes)
            for m in modes[k:] + modes[:k]:  # rotate the order: no mode always runs first
                times[m].append(block(m, step, a.block, dev, tmp))
    med = {m: statistics.median(v) for m, v in times.items()}
    out = {
        "kind": a.kind,
        "device": torch.cuda.get_device_name(0) if dev.type == "cuda" else f"cpu ({os.cpu_count()} cores)",
        "host": platform.node(),
        "torch": torch.__version__,
        "rounds": a.rounds,
        "block_steps": a.block,
        "tick_us": round(per_tick_us, 2),
        "median_step_ms": {m: round(v, 4) for m, v in med.items()},
        "cost_pct": {m: round(100 * (med[m] / med["plain"] - 1), 2) for m in modes[1:]},
        # the same round's blocks run back to back: their ratio cancels the drift between rounds (10-40% here)
        "cost_pct_paired": {
            m: round(100 * (statistics.median(a / b for a, b in zip(times[m], times["plain"])) - 1), 2)
            for m in modes[1:]
        },
        "spread_pct_plain": round(100 * (max(times["plain"]) - min(times["plain"])) / med["plain"], 1),
    }
    print(json.dumps(out, indent=2))
    if a.out:
        Path(a.out).write_text(json.dumps({**out, "blocks_ms": times}, indent=2))


if __name__ == "__main__":
    main()
