"""Planted: a deep narrow MLP at batch 32 with a for-loop Adam: hundreds of microsecond kernels."""

import torch
from _common import DEVICE, STEPS, mlp

model = mlp(256, 12)
opt = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=False)
x = torch.randn(32, 256, device=DEVICE)
for step in range(STEPS):
    loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
