"""The shape from issue 17: one LBFGS step is 20 closures over an LSTMCell unrolled for many steps.

argv: unrolled length, optimizer steps.
"""

import sys

import torch

length, steps = int(sys.argv[1]), int(sys.argv[2])
torch.manual_seed(0)
cell, head = torch.nn.LSTMCell(1, 16), torch.nn.Linear(16, 1)
params = [*cell.parameters(), *head.parameters()]
opt = torch.optim.LBFGS(params, lr=0.1, max_iter=20)
x, y = torch.randn(length, 4, 1), torch.randn(length, 4, 1)


def closure():
    opt.zero_grad()
    h, c = torch.zeros(4, 16), torch.zeros(4, 16)
    out = []
    for t in range(length):
        h, c = cell(x[t], (h, c))
        out.append(head(h))
    loss = torch.nn.functional.mse_loss(torch.stack(out), y)
    loss.backward()
    return loss


for step in range(steps):
    loss = opt.step(closure)
print("DONE", step + 1, round(float(loss), 4), flush=True)
