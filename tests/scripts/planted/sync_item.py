"""Planted: CPU-GPU syncs every step (.item() and printing a CUDA tensor) on an otherwise fast loop."""

import torch
from _common import DEVICE, SMALL, STEPS, mlp

width, batch = (128, 32) if SMALL else (2048, 2048)
model = mlp(width, 4)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(batch, width, device=DEVICE)
y = torch.randn(batch, width, device=DEVICE)
for step in range(STEPS):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    value = loss.item()  # planted: sync
    print(f"step {step} loss {loss}")  # planted: formats a CUDA tensor
