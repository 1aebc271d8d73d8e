"""No DataLoader: batches come from a tensor already in memory."""

import torch

model = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(6)])
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(32, 64)
for step in range(1000):
    loss = model(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
