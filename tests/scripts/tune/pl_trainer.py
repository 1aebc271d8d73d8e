"""A Lightning script (on the CPU test machines it runs against the stand-in in fake_pl/)."""

import lightning as L
import torch


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.conv(x).mean((2, 3)))

    def training_step(self, batch, i):
        x, y = batch
        return torch.nn.functional.cross_entropy(self(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(256, 3, 8, 8), torch.randint(0, 2, (256,)))
trainer = L.Trainer(max_steps=100, precision="32-true")
trainer.fit(Net(), torch.utils.data.DataLoader(data, batch_size=8))
