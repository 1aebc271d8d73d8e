"""Trains until interrupted; says READY once it is inside the profiled window."""

import sys

import torch

model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
step = 0
while True:
    loss = model(torch.randn(4, 8)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    step += 1
    if step == int(sys.argv[1]):
        print("READY", flush=True)
