"""Lightning Trainer on a transformer encoder over random tokens, bf16, for the H200 check of issue 18.

The base logs the loss per step to the progress bar (`self.log(..., prog_bar=True)`: Lightning reads the tensor
every batch); the fix is the table's: on_step=False, on_epoch=True. `record STEPS` / `ab ROUNDS` as gpu_hf.py.
"""

import os
import sys
from pathlib import Path

import lightning as L
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay"))
from _common import DEVICE, StepTimer  # noqa: E402

TINY = os.environ.get("FW_TINY") == "1"
SEQ, BATCH, DIM, LAYERS = (16, 8, 32, 1) if TINY else (256, 64, 1024, 8)
VARIANTS = ("base", "log_on_epoch")


class Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        return torch.randint(0, 8192, (SEQ,), generator=torch.Generator().manual_seed(i)), i % 10


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.variant = "base"
        self.embed = torch.nn.Embedding(8192, DIM)
        layer = torch.nn.TransformerEncoderLayer(DIM, 8 if DIM >= 64 else 2, 4 * DIM, batch_first=True)
        self.body = torch.nn.TransformerEncoder(layer, LAYERS)
        self.head = torch.nn.Linear(DIM, 10)

    def training_step(self, batch, i):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.head(self.body(self.embed(x)).mean(1)), y)
        if self.variant == "base":
            self.log("train_loss", loss, prog_bar=True)
        else:
            self.log("train_loss", loss, prog_bar=True, on_step=False, on_epoch=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4)


class _Step(L.Callback):
    def __init__(self, on_step):
        self.on_step = on_step

    def on_train_batch_end(self, *a, **kw):
        self.on_step()


def train(m: Model, steps: int, variant: str, on_step=None) -> None:
    m.variant = variant
    loader = torch.utils.data.DataLoader(Tokens(), batch_size=BATCH, num_workers=0)
    trainer = L.Trainer(max_steps=steps, accelerator="gpu" if DEVICE.type == "cuda" else "cpu", devices=1,
                        logger=False, enable_checkpointing=False, enable_model_summary=False,
                        precision="bf16-mixed", callbacks=[_Step(on_step)] if on_step else [],
                        log_every_n_steps=1)
    trainer.fit(m, loader)


def ab(rounds: int, warm: int, steps: int) -> dict:
    torch.manual_seed(0)
    m, out = Model(), {v: [] for v in VARIANTS}
    for r in range(rounds):
        for v in (VARIANTS if r % 2 == 0 else VARIANTS[::-1]):
            timer = StepTimer()
            train(m, warm + steps + 1, v, timer)
            ms = timer.step_ms(warm)
            out[v].append(sum(ms) / len(ms))
    return out


if __name__ == "__main__":
    import json

    mode, n = sys.argv[1], int(sys.argv[2])
    if mode == "record":
        torch.manual_seed(0)
        train(Model(), n, "base")
    else:
        print("AB " + json.dumps(ab(n, warm=3 if TINY else 10, steps=4 if TINY else 30)), flush=True)
