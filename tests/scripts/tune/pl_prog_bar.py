"""A tiny real Lightning script that shows its loss on the progress bar every step (tune's pl_log_epoch);
with --per-epoch it logs the loss per epoch instead, and tune has nothing to change."""

import sys

import lightning as L
import torch

PER_EPOCH = "--per-epoch" in sys.argv


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(8, 2)

    def training_step(self, batch, i):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.body(x), y)
        if PER_EPOCH:
            self.log("train_loss", loss, prog_bar=True, on_step=False, on_epoch=True)
        else:
            self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(512, 8), torch.randint(0, 2, (512,)))
trainer = L.Trainer(
    max_steps=40,
    accelerator="cpu",
    devices=1,
    logger=False,
    enable_checkpointing=False,
    enable_model_summary=False,
)
trainer.fit(Net(), torch.utils.data.DataLoader(data, batch_size=8))
