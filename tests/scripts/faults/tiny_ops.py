"""Steps of many tiny ops (like an LBFGS step of many closures): a window of them grows without end.

argv: ops per step, steps.
"""

import sys

import torch

ops, steps = int(sys.argv[1]), int(sys.argv[2])
w = torch.zeros(4, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.01)
for step in range(steps):
    x = torch.ones(4)
    for _ in range(ops):
        x = x * 1.0001 + 0.0001
    loss = (w * x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("DONE", step + 1, flush=True)
