"""Trains a few steps and changes the working directory half-way, as some scripts do."""

import os
import sys

import torch

model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(12):
    if step == 2:
        os.chdir(sys.argv[1])
    loss = model(torch.randn(4, 8)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("CWD", os.getcwd())
