"""minGPT-style trainer: AMP with a GradScaler, the step in a helper, periodic logging."""

import torch
from torch.utils.data import DataLoader


class Trainer:
    def __init__(self, model, dataset, local_rank, config):
        self.local_rank = local_rank
        self.model = model.to(local_rank)
        self.config = config
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=config.lr)  # expect: none
        self.scaler = torch.amp.GradScaler("cuda")
        self.loader = DataLoader(dataset, batch_size=config.batch_size, pin_memory=True,  # expect: none
                                 num_workers=config.workers, shuffle=True)

    def _run_batch(self, source, targets):
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            _, loss = self.model(source, targets)
        self.optimizer.zero_grad(set_to_none=True)  # expect: none
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.optimizer)
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self._log(norm)
        return loss

    def _log(self, norm):
        if not torch.isfinite(norm):  # expect: tensor-condition
            print(f"non-finite grad norm {norm}")

    def _run_epoch(self, epoch):
        for it, (source, targets) in enumerate(self.loader):
            source = source.to(self.local_rank, non_blocking=True)
            targets = targets.to(self.local_rank, non_blocking=True)
            batch_loss = self._run_batch(source, targets)
            if it % 100 == 0:
                print(f"epoch {epoch} iter {it} loss {batch_loss.item():.5f}")  # expect: none
            if batch_loss.isnan():  # expect: tensor-condition
                raise RuntimeError("nan loss")

    def train(self, epochs):
        for epoch in range(epochs):
            self._run_epoch(epoch)
