"""Planted: Python bookkeeping on the host between GPU steps (no sync, just slow host code)."""

import torch
from _common import DEVICE, SMALL, STEPS, mlp

width, batch = (256, 64) if SMALL else (2048, 4096)
model = mlp(width, 4)
opt = torch.optim.SGD(model.parameters(), lr=1e-4, foreach=True)
x = torch.randn(batch, width, device=DEVICE)


def bookkeeping(n: int) -> float:
    acc, i = 0.0, 0
    while i < n:  # planted: pure-Python work each step (no calls, so the profiler records no events inside)
        acc += i * 0.5
        i += 1
    return acc


for step in range(STEPS):
    with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
        loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    bookkeeping(20_000 if SMALL else 300_000)
