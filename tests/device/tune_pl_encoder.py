"""Lightning Trainer on a small transformer encoder, fp32, random sequences, the loss on the progress bar every
step: the Lightning script tests/device/tune_h200.py tunes (TUNE_H200_TINY=1: a tiny model for the CPU)."""

import os

import lightning as L
import torch

TINY = os.environ.get("TUNE_H200_TINY") == "1"
WIDTH = 32 if TINY else 256


class Seqs(torch.utils.data.Dataset):
    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        return torch.randn(16 if TINY else 64, WIDTH, generator=torch.Generator().manual_seed(i)), i % 10


class Encoder(L.LightningModule):
    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(WIDTH, 4, 4 * WIDTH, batch_first=True)
        self.body = torch.nn.TransformerEncoder(layer, 1 if TINY else 4)
        self.head = torch.nn.Linear(WIDTH, 10)

    def forward(self, x):
        return self.head(self.body(x).mean(1))

    def training_step(self, batch, i):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss, prog_bar=True, on_step=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4)


torch.manual_seed(0)
loader = torch.utils.data.DataLoader(Seqs(), batch_size=8 if TINY else 64, num_workers=0)
trainer = L.Trainer(
    max_steps=100_000,
    accelerator="auto",
    devices=1,
    logger=False,
    enable_checkpointing=False,
    enable_model_summary=False,
    precision="32-true",
    log_every_n_steps=1,
)
trainer.fit(Encoder(), loader)
