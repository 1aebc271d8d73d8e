"""Tiny Lightning fit on CPU. argv: [step|epoch|sync_dist|sync_dist_epoch] [callback|plain] [logdir].

step/epoch: self.log(prog_bar=True) on each step / on the epoch. sync_dist*: one-process DDP (gloo), logging with
sync_dist=True on each step / on the epoch.
"""

import os
import sys

import lightning.pytorch as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

mode = sys.argv[1] if len(sys.argv) > 1 else "step"
per_step = mode in ("step", "sync_dist")
sync_dist = mode.startswith("sync_dist")
use_callback = (sys.argv[2] if len(sys.argv) > 2 else "plain") == "callback"
logdir = sys.argv[3] if len(sys.argv) > 3 else "log"


class Tiny(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True, on_step=per_step, on_epoch=not per_step,
                 sync_dist=sync_dist)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


torch.manual_seed(0)
data = TensorDataset(torch.randn(256, 32), torch.randint(0, 4, (256,)))
callbacks = []
if use_callback:
    from idlehound.integrations.lightning import IdlehoundCallback

    callbacks.append(IdlehoundCallback(logdir=logdir, skip=3, warmup=1, active=int(os.environ.get("ACTIVE", "3"))))
trainer = pl.Trainer(max_steps=12, accelerator="cpu", devices=1,
                     strategy=pl.strategies.DDPStrategy(process_group_backend="gloo") if sync_dist else "auto",
                     callbacks=callbacks, default_root_dir=logdir,
                     logger=pl.loggers.TensorBoardLogger(logdir, name="pl_tb") if use_callback else False,
                     enable_checkpointing=False, enable_model_summary=False, log_every_n_steps=50)
trainer.fit(Tiny(), DataLoader(data, batch_size=16))
