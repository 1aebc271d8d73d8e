"""Planted: CPU-GPU syncs every step (.item() and printing a CUDA tensor) in a loop the GPU could keep up with."""

import torch
from _common import DEVICE, SMALL, STEPS, mlp

width, batch = (128, 32) if SMALL else (4096, 4096)
model = mlp(width, 4)
opt = torch.optim.SGD(model.parameters(), lr=1e-3, foreach=True)
x = torch.randn(batch, width, device=DEVICE)
y = torch.randn(batch, width, device=DEVICE)
for step in range(STEPS):
    with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
        loss = torch.nn.functional.mse_loss(model(x).float(), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    value = loss.item()  # planted: sync
    print(f"step {step} loss {loss}")  # planted: formats a CUDA tensor
