"""A GPU training loop whose data loading becomes 5x slower after SLOW_AFTER steps (tests/device/watch_h200.py)."""

import os
import sys
import time

import torch

SLOW_AFTER = int(os.environ.get("SLOW_AFTER", "300"))
STEPS = int(os.environ.get("STEPS", "480"))
BASE_S = float(os.environ.get("BASE_S", "0.004"))
BATCH = 64
dev = torch.device("cuda")


class Slowing(torch.utils.data.Dataset):
    def __len__(self):
        return STEPS * BATCH

    def __getitem__(self, i):
        time.sleep(BASE_S * (5 if i // BATCH >= SLOW_AFTER else 1) / BATCH)  # reading the sample
        return torch.randn(512), torch.randn(1)


model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 1)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = torch.utils.data.DataLoader(Slowing(), batch_size=BATCH, num_workers=0)
for x, y in loader:
    x, y = x.to(dev), y.to(dev)
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("trained", file=sys.stderr)
