"""Reads a line from stdin first (a prompt, or a pipe it expects), optionally sleeps, then trains."""

import sys
import time

import torch

answer = sys.stdin.readline()
time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 0)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 8)
for step in range(100):
    loss = model(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
