"""Data-bound: each sample takes 10 ms to 'decode' in the main process (num_workers=0)."""

import sys
import time

import torch


class Slow(torch.utils.data.Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        time.sleep(0.01)
        g = torch.Generator().manual_seed(i)  # deterministic per sample: workers must not change the math
        return torch.randn(32, generator=g), i % 4


model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
loader = torch.utils.data.DataLoader(Slow(), batch_size=16, shuffle=True)
for x, y in loader:
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done", sys.argv[1:])
