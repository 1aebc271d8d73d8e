"""Trains until the file named by its first argument exists, then ends with exit code 0 (tests/test_watch.py: a
job that runs for as long as the test needs it, and no longer)."""

import os
import sys
import time

import torch

STOP = sys.argv[1]


class UntilTold(torch.utils.data.IterableDataset):
    def __iter__(self):
        while not os.path.exists(STOP):
            time.sleep(0.002)  # reading a batch
            yield torch.randn(4, 32), torch.randn(4, 1)


model = torch.nn.Linear(32, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in torch.utils.data.DataLoader(UntilTold(), batch_size=None):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("trained", file=sys.stderr)
