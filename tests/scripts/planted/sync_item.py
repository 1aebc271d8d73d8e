"""Planted: print(loss) and .item() every step: host work the GPU waits for, on a GPU-heavy step."""

import torch
from _common import DEVICE, SMALL, STEPS, mlp

width, batch = (128, 32) if SMALL else (4096, 8192)
model = mlp(width, 4)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=DEVICE.type == "cuda")
x = torch.randn(batch, width, device=DEVICE)
for step in range(STEPS):
    with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
        loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    value = loss.item()  # planted: sync
    print(loss)  # planted: formats a CUDA tensor on the host
