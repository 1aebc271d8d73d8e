"""Loader options in dicts passed as **kwargs (the MNIST example's shape), the worker count from its own flag."""

import argparse
import sys
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, default=16)
parser.add_argument("-j", "--workers", type=int, default=0, help="loader workers of the test loader")
args = parser.parse_args()


class Slow(torch.utils.data.Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        time.sleep(0.002)
        g = torch.Generator().manual_seed(i)
        return torch.randn(32, generator=g), i % 4


train_kwargs = {"batch_size": args.batch_size}
loader_kwargs = {"num_workers": 0, "shuffle": True}
train_kwargs.update(loader_kwargs)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
test = torch.utils.data.DataLoader(Slow(), batch_size=64, num_workers=args.workers)
for x, y in torch.utils.data.DataLoader(Slow(), **train_kwargs):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done", file=sys.stderr)
