"""Shared bits of the replay-validation loops: argv, CUDA-event step timing, an ABAB driver."""

import json
import sys
import time

import torch

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def args() -> tuple[int, str]:
    """`script.py STEPS [VARIANT]`: the profiled run uses the base variant."""
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    return steps, sys.argv[2] if len(sys.argv) > 2 else "base"


class StepTimer:
    """CUDA events recorded at each step end (the GPU's pace; no sync inside the loop)."""

    def __init__(self) -> None:
        self.events = []

    def __call__(self) -> None:
        if DEVICE.type == "cuda":
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            self.events.append(ev)
        else:
            self.events.append(time.perf_counter())

    def step_ms(self, warm: int) -> list[float]:
        if DEVICE.type == "cuda":
            torch.cuda.synchronize()
            ev = self.events[warm:]
            return [a.elapsed_time(b) for a, b in zip(ev, ev[1:])]
        t = self.events[warm:]
        return [1e3 * (b - a) for a, b in zip(t, t[1:])]


def ab(train, variants: list[str], rounds: int = 3, warm: int = 10, steps: int = 30) -> dict:
    """Interleaved A/B: for each round, the base then each fixed variant; mean step after warm-up."""
    out = {v: [] for v in ["base", *variants]}
    for _ in range(rounds):
        for v in out:
            timer = StepTimer()
            train(warm + steps + 1, timer, v)
            ms = timer.step_ms(warm)
            out[v].append(sum(ms) / len(ms))
    return out


def main_truth(train, variants: list[str], **kw) -> None:
    """TRUTH_VARIANTS (comma-separated), TRUTH_ROUNDS and TRUTH_STEPS narrow or lengthen a re-measurement."""
    import os

    if os.environ.get("TRUTH_VARIANTS"):
        variants = os.environ["TRUTH_VARIANTS"].split(",")
    if os.environ.get("TRUTH_ROUNDS"):
        kw["rounds"] = int(os.environ["TRUTH_ROUNDS"])
    if os.environ.get("TRUTH_STEPS"):
        kw["steps"] = int(os.environ["TRUTH_STEPS"])
    res = ab(train, variants, **kw)
    print("TRUTH " + json.dumps(res), flush=True)
