"""Times one training script without idlehound: `python ab_time.py SKIP STEPS script.py [args]` prints
`AB_MS <ms per optimizer step>` over STEPS steps after SKIP warm-up steps (CUDA events on a GPU), then stops it.
The independent check of tests/device/tune_h200.py: no profiler, no injection, only an optimizer step hook."""

import os
import runpy
import sys
import time

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

skip, steps, script = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
cuda = torch.cuda.is_available()
marks = []
first = []


def on_step(opt, args, kwargs):
    if not first:
        first.append(id(opt))
    if id(opt) != first[0]:  # a second optimizer: its steps are not the training steps
        return
    n = len(marks) + 1
    if cuda:
        ev = torch.cuda.Event(enable_timing=True)
        ev.record()
        marks.append(ev)
    else:
        marks.append(time.perf_counter())
    if n >= skip + steps:
        timed = marks[skip - 1 :]
        if cuda:
            torch.cuda.synchronize()
            ms = timed[0].elapsed_time(timed[-1])
        else:
            ms = (timed[-1] - timed[0]) * 1e3
        print(f"AB_MS {ms / (len(timed) - 1):.4f}", flush=True)
        os._exit(0)


register_optimizer_step_post_hook(on_step)
sys.argv[:] = [script, *sys.argv[4:]]
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
runpy.run_path(script, run_name="__main__")
print("AB_SHORT the script ended before the steps were timed", flush=True)
