"""Data-bound, and one short epoch: 20 optimizer steps in all."""

import time

import torch


class Slow(torch.utils.data.Dataset):
    def __len__(self):
        return 20 * 16

    def __getitem__(self, i):
        time.sleep(0.002)
        g = torch.Generator().manual_seed(i)
        return torch.randn(32, generator=g), i % 4


model = torch.nn.Linear(32, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for x, y in torch.utils.data.DataLoader(Slow(), batch_size=16):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
