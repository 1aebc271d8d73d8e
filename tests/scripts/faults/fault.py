"""One script for the fault matrix. argv: MODE N.

MODE raise / exit / os_exit: fail that way at step N. MODE run: train until a signal arrives (at most
30 s, then exit 5 so a lost signal shows as a wrong exit code, not a hang). Steps take ~10 ms.
"""

import os
import sys
import time

import torch

mode, n = sys.argv[1], int(sys.argv[2])
torch.set_num_threads(1)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
t0 = time.monotonic()
step = 0
while True:
    if step == n and mode == "raise":
        raise RuntimeError(f"planted failure at step {n}")
    if step == n and mode == "exit":
        sys.exit(7)
    if step == n and mode == "os_exit":
        os._exit(9)
    if mode != "run" and step > n:
        break
    if time.monotonic() - t0 > 30:
        sys.exit(5)
    loss = model(torch.randn(4, 8)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(0.01)
    step += 1
