"""Planted: a healthy loop that runs with almost all device memory taken."""

import torch
from _common import DEVICE, STEPS, mlp

if DEVICE.type == "cuda":
    free, total = torch.cuda.mem_get_info()
    hog = torch.empty(int(free - 6 * 2**30), dtype=torch.uint8, device=DEVICE)  # planted: leaves ~6 GiB
model = mlp(4096, 4)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=DEVICE.type == "cuda")
x = torch.randn(8192, 4096, device=DEVICE)
for step in range(STEPS):
    with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
        loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
