"""What one step-clock tick costs on the GPU host, part by part (issue 34): microseconds per call, idle GPU."""

import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from idlehound.capture._clock import StepClock  # noqa: E402


def per_call_us(fn, n: int = 5000) -> float:
    for _ in range(100):
        fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) * 1e6 / n


def main() -> None:
    x = torch.ones(1, device="cuda")
    torch.cuda.synchronize()
    ev = torch.cuda.Event(enable_timing=True)
    ev.record()
    ev2 = torch.cuda.Event(enable_timing=True)
    ev2.record()
    torch.cuda.synchronize()
    parts = {
        "memory_allocated": torch.cuda.memory_allocated,
        "Event()+record": lambda: torch.cuda.Event(enable_timing=True).record(),
        "record (reused)": ev.record,
        "query": ev.query,
        "elapsed_time": lambda: ev.elapsed_time(ev2),
        "monotonic": time.monotonic,
        "add (1 elt kernel)": lambda: x.add_(1),
    }
    for name, fn in parts.items():
        print(f"{name:>20}: {per_call_us(fn):8.2f} us")
    with tempfile.TemporaryDirectory() as d:
        clock = StepClock(Path(d) / "steps.jsonl", cuda=True)
        i = iter(range(10**9))
        print(
            f"{'StepClock.tick':>20}: {per_call_us(lambda: clock.tick(next(i), time.monotonic()), 20000):8.2f} us"
        )
        clock.close()


if __name__ == "__main__":
    main()
