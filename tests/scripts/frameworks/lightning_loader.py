"""Tiny Lightning fit on CPU, its loader handed over three ways. argv: [kwarg|datamodule|hook] [memory|slow] [logdir].

kwarg: trainer.fit(model, train_dataloaders=DataLoader(...)); datamodule: trainer.fit(model, datamodule=dm);
hook: trainer.fit(model), the LightningModule's train_dataloader(). memory: a TensorDataset (batches are slices
of tensors in memory); slow: each sample takes 1 ms to read in __getitem__.
"""

import os
import sys
import time

import lightning.pytorch as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset

how = sys.argv[1] if len(sys.argv) > 1 else "kwarg"
slow = (sys.argv[2] if len(sys.argv) > 2 else "memory") == "slow"
logdir = sys.argv[3] if len(sys.argv) > 3 else "log"


class SlowSamples(Dataset):
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        time.sleep(0.001)  # reading and decoding one sample
        return self.x[i], self.y[i]


torch.manual_seed(0)
x, y = torch.randn(4096, 32), torch.randint(0, 4, (4096,))
data = SlowSamples(x, y) if slow else TensorDataset(x, y)


def loader():
    return DataLoader(data, batch_size=16)


class Tiny(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class WithHook(Tiny):
    def train_dataloader(self):
        return loader()


class Data(pl.LightningDataModule):
    def train_dataloader(self):
        return loader()


from idlehound.integrations.lightning import IdlehoundCallback  # noqa: E402

callback = IdlehoundCallback(logdir=logdir, skip=3, warmup=1, active=int(os.environ.get("ACTIVE", "3")))
trainer = pl.Trainer(max_steps=12, accelerator="cpu", devices=1, callbacks=[callback], default_root_dir=logdir,
                     logger=False, enable_checkpointing=False, enable_model_summary=False, log_every_n_steps=50)
if how == "kwarg":
    trainer.fit(Tiny(), train_dataloaders=loader())
elif how == "datamodule":
    trainer.fit(Tiny(), datamodule=Data())
else:
    trainer.fit(WithHook())
