"""Lightning Trainer on a small transformer classifier; logs the loss to the progress bar every step."""

import lightning as L
import torch
from _common import args, main_truth

VARIANTS = {
    "sync": "loss logged without prog_bar, every 50 steps",
    "data_loading": "num_workers=4",
    "launch_bound": "trainer.fit(torch.compile(model)) (the launch-bound finding's Lightning fix)",
    "data_loading+launch_bound": "both fixes together",
}


class Seqs(torch.utils.data.Dataset):
    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(64, 256, generator=g), i % 10


class Model(L.LightningModule):
    def __init__(self, variant: str):
        super().__init__()
        self.variant = variant
        layer = torch.nn.TransformerEncoderLayer(256, 8, 1024, batch_first=True)
        self.body = torch.nn.TransformerEncoder(layer, 4)
        self.head = torch.nn.Linear(256, 10)

    def forward(self, x):
        return self.head(self.body(x).mean(1))

    def training_step(self, batch, i):  # through self(x): Lightning compiles the forward only
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self(x), y)
        if self.variant == "sync":
            if i % 50 == 0:
                self.log("train_loss", loss)
        else:
            self.log("train_loss", loss, prog_bar=True, on_step=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4)


class _Step(L.Callback):
    def __init__(self, on_step):
        self.on_step = on_step

    def on_train_batch_end(self, *a, **kw):
        self.on_step()


def train(steps: int, on_step, variant: str = "base") -> None:
    torch.manual_seed(0)
    fixes = variant.split("+")
    loader = torch.utils.data.DataLoader(Seqs(), batch_size=64, num_workers=4 if "data_loading" in fixes else 0,
                                         persistent_workers="data_loading" in fixes)
    trainer = L.Trainer(max_steps=steps, accelerator="auto", devices=1, logger=False, enable_checkpointing=False,
                        enable_model_summary=False, precision="bf16-mixed", callbacks=[_Step(on_step)],
                        log_every_n_steps=1)
    model = Model(variant)
    trainer.fit(torch.compile(model) if "launch_bound" in fixes else model, loader)


if __name__ == "__main__":
    n, v = args()
    if v == "truth":
        main_truth(train, list(VARIANTS), warm=10, steps=40)
    else:
        train(n, lambda: None, v)
