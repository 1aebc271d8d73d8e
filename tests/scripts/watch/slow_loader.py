"""A training loop whose data loading becomes 5x slower after SLOW_AFTER steps (tests/test_watch.py)."""

import os
import sys
import time

import torch

SLOW_AFTER = int(os.environ.get("SLOW_AFTER", "150"))
STEPS = int(os.environ.get("STEPS", "260"))
BASE_S = float(os.environ.get("BASE_S", "0.002"))
BATCH = 4
KILL_AT = int(os.environ.get("KILL_AT", "-1"))  # SIGKILL at this step: a job that dies mid-window


class Slowing(torch.utils.data.Dataset):
    def __len__(self):
        return STEPS * BATCH

    def __getitem__(self, i):
        time.sleep(BASE_S * (5 if i // BATCH >= SLOW_AFTER else 1) / BATCH)  # reading the sample
        return torch.randn(32), torch.randn(1)


model = torch.nn.Linear(32, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = torch.utils.data.DataLoader(Slowing(), batch_size=BATCH, num_workers=0)
for step, (x, y) in enumerate(loader):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step == KILL_AT:
        os.kill(os.getpid(), 9)
print("trained", file=sys.stderr)
sys.exit(int(os.environ.get("EXIT_CODE", "0")))
