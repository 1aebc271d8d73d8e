"""DDP-tutorial shape: the step lives in _run_batch, called from the loop in _run_epoch."""

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model, train_data, optimizer, gpu_id):
        self.gpu_id = gpu_id
        self.model = model.to(gpu_id)
        self.train_data = train_data
        self.optimizer = optimizer
        self.history = []

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        output = self.model(source)
        loss = F.cross_entropy(output, targets)
        loss.backward()
        self.optimizer.step()
        return loss.item()  # expect: item-in-loop

    def _run_epoch(self, epoch):
        steps = len(self.train_data)
        print(f"[GPU{self.gpu_id}] Epoch {epoch} | Steps: {steps}")  # expect: none
        for source, targets in self.train_data:
            source = source.to(self.gpu_id, non_blocking=True)  # expect: none
            targets = targets.to(self.gpu_id)  # expect: blocking-to
            batch_loss = self._run_batch(source, targets)
            if batch_loss > 100.0:  # expect: none
                print(f"loss spiked: {batch_loss:.3f}")  # expect: none
        return batch_loss

    def train(self, max_epochs):
        for epoch in range(max_epochs):
            last = self._run_epoch(epoch)
            self.history.append(last)
            if self.gpu_id == 0 and last < 0.01:  # expect: none
                print(f"epoch {epoch} done, last loss {last}")  # expect: none


def main():
    data = TensorDataset(torch.randn(256, 20), torch.randint(0, 2, (256,)))
    loader = DataLoader(data, batch_size=32, pin_memory=True, num_workers=2)  # expect: none
    model = torch.nn.Linear(20, 2)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    Trainer(model, loader, opt, gpu_id=torch.cuda.current_device()).train(3)


if __name__ == "__main__":
    main()
