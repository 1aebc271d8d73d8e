"""Lightning fit with IdlehoundCallback(watch=...): a later window every EVERY steps (tests/test_watch.py)."""

import sys

import lightning.pytorch as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from idlehound.capture import WatchOptions
from idlehound.integrations.lightning import IdlehoundCallback


class Tiny(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(32, 4)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


data = TensorDataset(torch.randn(480, 32), torch.randint(0, 4, (480,)))
cb = IdlehoundCallback(sys.argv[1], skip=3, warmup=1, active=2, watch=WatchOptions(every=40, steps=2, cooldown=0))
trainer = pl.Trainer(max_epochs=1, callbacks=[cb], logger=False, enable_checkpointing=False, enable_progress_bar=False)
trainer.fit(Tiny(), DataLoader(data, batch_size=4))
print("RUN", cb.run_dir)
