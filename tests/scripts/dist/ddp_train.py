"""DDP training with gloo on the CPU; rank SLOW_RANK does extra host work each step (a planted straggler)."""

import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 256), torch.randn(64, 1)
slow = int(os.environ.get("SLOW_RANK", "1"))
for step in range(int(sys.argv[1])):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if rank == slow:
        time.sleep(0.03)  # planted: this rank is slower every step
dist.destroy_process_group()
