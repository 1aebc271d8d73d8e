"""Already does what some candidates would add: its Adam runs foreach, and its model has no convolutions."""

import torch

model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
x = torch.randn(8, 16)
for step in range(200):
    loss = model(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
