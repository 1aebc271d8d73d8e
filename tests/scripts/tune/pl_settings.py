"""A Lightning script on a linear model; argv: PRECISION [benchmark] (on CPU test machines: the stand-in fake_pl/)."""

import sys

import lightning as L
import torch


class Linear(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(16, 2)

    def training_step(self, batch, i):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.head(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(256, 16), torch.randint(0, 2, (256,)))
extra = {"benchmark": True} if sys.argv[2:] == ["benchmark"] else {}
trainer = L.Trainer(max_steps=100, precision=sys.argv[1] if len(sys.argv) > 1 else "32-true", **extra)
trainer.fit(Linear(), torch.utils.data.DataLoader(data, batch_size=8))
