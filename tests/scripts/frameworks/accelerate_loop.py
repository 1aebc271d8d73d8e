"""Tiny accelerate loop on CPU with a tqdm bar. argv: [postfix tensor|number] [logdir].

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

postfix_tensor = (sys.argv[1] if len(sys.argv) > 1 else "tensor") == "tensor"
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
    for step, (x, y) in enumerate(pbar):
        loss = nn.functional.cross_entropy(model(x), y)
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
        if postfix_tensor:
            pbar.set_postfix(loss=loss)
        elif step % 8 == 0:
            pbar.set_postfix(loss=f"{loss.item():.3f}")
        prof.step()
accelerator.end_training()
