"""Planted: a large pageable host batch copied to the GPU with a blocking .to() every step."""

import torch
from _common import DEVICE, SMALL, STEPS, mlp

width, batch = (256, 64) if SMALL else (4096, 8192)
model = mlp(width, 2)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
host_x = torch.randn(batch, width)  # pageable host memory
for step in range(STEPS):
    x = host_x.to(DEVICE)  # planted: pageable, blocking copy
    with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
        loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
