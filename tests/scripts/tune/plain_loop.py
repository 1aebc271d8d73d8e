"""A plain loop on a tensor in memory; argv: [compile] to compile the model itself (eager backend: no compiler)."""

import sys

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
if sys.argv[1:] == ["compile"]:
    model = torch.compile(model, backend="eager")
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 32), torch.randn(64, 1)
for step in range(200):
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
