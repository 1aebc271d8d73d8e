"""Healthy control: .item() every step on a GPU-bound loop costs almost nothing and must not be reported."""

import torch
from _common import DEVICE, SMALL, STEPS, mlp

width, batch = (256, 64) if SMALL else (4096, 8192)
model = mlp(width, 4)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=DEVICE.type == "cuda")
x = torch.randn(batch, width, device=DEVICE)
for step in range(STEPS):
    with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
        loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    value = loss.item()  # a sync, but the GPU has little queued behind it
