"""Ctrl-C landing inside torch's C++ while it calls back into Python, under `idlehound run` (issue 31, item 9).

    python benchmarks/stress_sigint_callbacks.py [--trials 40] [--max-delay 1.5] [--seed 1] [--memory] [--cuda]

An earlier session once saw `idlehound run` abort on Ctrl-C with `terminate called after throwing an instance of
'pybind11::error_already_set'` (exit -6): a KeyboardInterrupt raised in Python code that C++ called, where the
C++ caller cannot pass an exception on. This harness tries to reproduce it on CPU. The workload (written to a
temporary file) spends most of its time in Python that torch's C++ calls: tensor hooks run by the autograd engine,
module forward hooks and pre-hooks, a custom autograd.Function's backward, record_function ranges, with the
profiler recording Python stacks (its tracer sees every call) and, with --memory, allocations. Each trial starts
`python -m idlehound run` on it and sends SIGINT: every other trial after a uniform random delay once the training
loop runs (a marker file; while the window records, as it is saved, or after), the others at a random moment from
0.3x to 1.1x the time the loop takes to start (torch's import, the session's start, the first steps: the one
abort seen, under a load of 10 on 2 cores, came 2.5 s into a run). It tallies exit codes and what stderr said.
Target: every trial exits 130 (Ctrl-C) with run.json completed (not left "running"); an exit of -6 or "terminate
called" is the bug.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

WORKLOAD = r"""
import os, sys, time
from pathlib import Path
import torch

torch.set_num_threads(1)
dev = torch.device(os.environ.get("STRESS_DEVICE", "cpu"))  # --cuda: the same hooks around GPU work

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):  # Python called by the autograd engine (C++)
        (x,) = ctx.saved_tensors
        return 2 * x * g

def busy(n=200):  # Python work inside each callback, so that a signal often lands there
    s = 0
    for i in range(n):
        s += i
    return s

model = torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(6)]).to(dev)
for m in model:
    m.register_forward_pre_hook(lambda mod, inp: busy() and None)
    m.register_forward_hook(lambda mod, inp, out: busy() and None)
    m.register_full_backward_hook(lambda mod, gin, gout: busy() and None)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
marker = Path(sys.argv[1])
t0 = time.monotonic()
step = 0
while time.monotonic() - t0 < 60:
    with torch.autograd.profiler.record_function("step_body"):
        x = torch.randn(8, 16, device=dev, requires_grad=True)
        x.register_hook(lambda g: busy() and None)  # run by the engine (C++) during backward
        y = Square.apply(model(x)).sum()
        opt.zero_grad()
        y.backward()
        opt.step()
    step += 1
    if step == 5:
        marker.write_text("looping")
sys.exit(5)  # the signal never came (a lost signal shows as exit 5, not a hang)
"""


def trial(script: Path, delay: float, tmp: Path, memory: bool, from_start: bool = False) -> dict:
    marker = tmp / "looping"
    logdir = tmp / "log"
    cmd = [sys.executable, "-m", "idlehound", "run", "--logdir", str(logdir), "--skip", "2", "--warmup", "1"]
    cmd += ["--active", "40", "--no-report"] + (["--memory"] if memory else []) + [str(script), str(marker)]
    p = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint
    )
    t0 = time.monotonic()
    if from_start:  # during torch's import, the session's start, the first steps (the first optimizer step
        time.sleep(delay)  # imports torch._dynamo: seconds of Python run by C++ registration code)
    else:
        while not marker.exists() and p.poll() is None and time.monotonic() - t0 < 120:
            time.sleep(0.01)
        time.sleep(delay)
    loop_s = time.monotonic() - t0
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        err += "\n(hung: killed after 300 s)"
    states = [json.loads(f.read_text()).get("status") for f in logdir.glob("*/run.json")]
    return {
        "code": p.returncode,
        "terminate": "terminate called" in err or "error_already_set" in err,
        "traceback": "Traceback" in err,
        "run_json": states[0] if states else "none",
        "err": err[-600:],
        "at": loop_s,
    }


def _default_sigint() -> None:
    """SIGINT as a terminal delivers it: a shell's background job (`cmd &`, nohup) starts with SIGINT ignored,
    which the child would inherit, and then no Ctrl-C reaches it at all (every trial ends 5)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--max-delay", type=float, default=1.5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--memory", action="store_true", help="also record memory allocations")
    ap.add_argument(
        "--cuda", action="store_true", help="the workload's tensors on the GPU (CUPTI's callbacks too)"
    )
    a = ap.parse_args()
    if a.cuda:
        os.environ["STRESS_DEVICE"] = "cuda"  # the trials' children inherit it
    rng = random.Random(a.seed)
    tally: Counter = Counter()
    odd: list[str] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "hooks_workload.py"
        script.write_text(WORKLOAD)
        start = (
            0.0  # seconds from spawn to the training loop (the first trial, signalled in the loop, times it)
        )
        for i in range(a.trials):
            tmp = Path(d) / f"t{i}"
            tmp.mkdir()
            from_start = i % 2 == 1 and start > 0
            delay = rng.uniform(0.3 * start, 1.1 * start) if from_start else rng.uniform(0, a.max_delay)
            r = trial(script, delay, tmp, a.memory, from_start)
            if not from_start and not start:
                start = r["at"] - delay
            tally["signalled from the start" if from_start else "signalled in the loop"] += 1
            tally[f"exit {r['code']}"] += 1
            tally[f"run.json {r['run_json']}"] += 1
            print(f"trial {i}: exit {r['code']}, run.json {r['run_json']}, at {r['at']:.1f} s", flush=True)
            tally["terminate called"] += r["terminate"]
            tally["traceback"] += r["traceback"]
            if r["code"] != 130 or r["terminate"] or r["run_json"] in ("running", "none"):
                odd.append(f"exit {r['code']}, run.json {r['run_json']}: {r['err'].strip()[-300:]!r}")
    print(
        f"SIGINT inside torch callbacks: {a.trials} trials in {time.perf_counter() - t0:.0f} s "
        f"(torch {_torch_version()}, {os.cpu_count()} cores): "
        + ", ".join(f"{k}: {v}" for k, v in sorted(tally.items()))
    )
    for o in odd[:5]:
        print("  ", o)


def _torch_version() -> str:
    try:
        import torch

        return torch.__version__
    except ImportError:
        return "not installed"


if __name__ == "__main__":
    main()
