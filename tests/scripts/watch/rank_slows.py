"""Two gloo ranks that meet every SYNC steps; rank SLOW_RANK's steps become 5x slower after SLOW_AFTER steps.

Between meetings the other rank runs at its own pace and then waits once, so its median step time stays
steady: only SLOW_RANK sees the slowdown (tests/test_watch.py)."""

import os
import sys
import time

import torch
import torch.distributed as dist

STEPS = int(os.environ.get("STEPS", "300"))
SLOW_AFTER = int(os.environ.get("SLOW_AFTER", "100"))
SLOW_RANK = int(os.environ.get("SLOW_RANK", "1"))
BASE_S = float(os.environ.get("BASE_S", "0.005"))
SYNC = 10

dist.init_process_group("gloo")
rank = dist.get_rank()
model = torch.nn.Linear(32, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(8, 32), torch.randn(8, 1)
for step in range(STEPS):
    time.sleep(BASE_S * (5 if rank == SLOW_RANK and step >= SLOW_AFTER else 1))  # planted: this rank slows
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % SYNC == SYNC - 1:
        dist.all_reduce(torch.zeros(1))
dist.destroy_process_group()
print("trained", file=sys.stderr)
