"""Planted: GEMM-heavy fp32 training with TF32 off: matrix math on CUDA cores."""

import torch
from _common import DEVICE, SMALL, STEPS, mlp

torch.backends.cuda.matmul.allow_tf32 = False
width, batch = (256, 64) if SMALL else (4096, 4096)
model = mlp(width, 4)
opt = torch.optim.SGD(model.parameters(), lr=1e-4, foreach=True)
x = torch.randn(batch, width, device=DEVICE)
for step in range(STEPS):
    loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
