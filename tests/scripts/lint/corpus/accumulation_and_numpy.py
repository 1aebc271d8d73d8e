"""Gradient accumulation, numpy arrays, timing and memory calls in a CUDA loop."""

import numpy as np
import torch

model = torch.nn.Linear(32, 1).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)  # expect: none
accum = 4
history = np.zeros(1000)
for step in range(1000):
    x = torch.randn(16, 32, device="cuda")
    loss = model(x).pow(2).mean() / accum
    loss.backward()
    if (step + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
        torch.cuda.synchronize()  # expect: none
    arr = loss.detach().cpu().numpy()  # expect: cpu-in-loop
    history[step] = arr
    recent = history[max(0, step - 10):step + 1]
    smooth = recent.mean()
    if smooth > 1.0:  # expect: none
        pass
    as_list = recent.tolist()  # expect: none
    pred = model(x).detach().numpy()  # expect: numpy-in-loop
    torch.cuda.empty_cache()  # expect: empty-cache-in-loop
    count = int(x.size(0))  # expect: none
    steps_done = int(step)  # expect: none
    bad = int(loss > 1)  # expect: float-int-of-tensor
    start = torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda.synchronize()  # expect: synchronize-in-loop
