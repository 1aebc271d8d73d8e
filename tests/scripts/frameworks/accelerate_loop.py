"""Tiny accelerate loop on CPU with a tqdm bar. argv: [tensor|number|gather|gather_epoch] [logdir].

tensor/number: the bar's postfix is the loss tensor each step / a Python number every 8 steps. gather*: one-process
DDP (gloo) and a number postfix; the loss is gathered with accelerator.gather_for_metrics each step / once after
the loop.

Profiled with idlehound.integrations.profile_steps; headline figures go to accelerate's TensorBoard tracker.
"""

import os
import sys

import torch
from accelerate import Accelerator
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm

from idlehound.integrations import profile_steps

mode = sys.argv[1] if len(sys.argv) > 1 else "tensor"
postfix_tensor = mode == "tensor"
if mode.startswith("gather"):  # a process group of one: gather is then a real all_gather, as on N ranks
    os.environ.update(WORLD_SIZE="1", RANK="0", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
logdir = sys.argv[2] if len(sys.argv) > 2 else "log"

torch.manual_seed(0)
accelerator = Accelerator(cpu=True, log_with="tensorboard", project_dir=logdir)
accelerator.init_trackers("accelerate_tb")
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(192, 32), torch.randint(0, 4, (192,))), batch_size=16)
model, opt, loader = accelerator.prepare(model, opt, loader)
with profile_steps(logdir=logdir, run_name="accelerate", skip=3, warmup=1, active=int(os.environ.get("ACTIVE", "3")),
                   log=accelerator.log) as prof:
    pbar = tqdm(loader, mininterval=0)
    total = torch.zeros(())
    for step, (x, y) in enumerate(pbar):
        loss = nn.functional.cross_entropy(model(x), y)
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
        if mode == "gather":
            total += accelerator.gather_for_metrics(loss.detach()).sum()
        else:
            total += loss.detach()
        if postfix_tensor:
            pbar.set_postfix(loss=loss)
        elif step % 8 == 0:
            pbar.set_postfix(loss=f"{loss.item():.3f}")
        prof.step()
if mode == "gather_epoch":
    total = accelerator.gather_for_metrics(total).sum()
accelerator.end_training()
