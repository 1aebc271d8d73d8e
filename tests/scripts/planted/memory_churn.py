"""Planted: torch.cuda.empty_cache() every step, so the allocator frees and re-allocates (and syncs)."""

import torch
from _common import DEVICE, SMALL, STEPS, mlp

width, batch = (256, 64) if SMALL else (4096, 8192)
model = mlp(width, 4)
opt = torch.optim.SGD(model.parameters(), lr=1e-4, foreach=True)
for step in range(STEPS):
    x = torch.randn(batch, width, device=DEVICE)
    with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
        loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if DEVICE.type == "cuda":
        torch.cuda.empty_cache()  # planted
