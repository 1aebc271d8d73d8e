"""Loader options in a dict filled only with an accelerator, `{...} if use_accel else {}`, passed beside keywords
(the VAE / MNIST-RNN shape): an option added beside **kwargs would be passed twice on an accelerator."""

import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--no-accel", action="store_true")
parser.add_argument("--steps", type=int, default=40)
args = parser.parse_args()
use_accel = not args.no_accel and torch.accelerator.is_available()
device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")

data = torch.utils.data.TensorDataset(torch.randn(2048, 16), torch.randint(0, 3, (2048,)))
extra = {"num_workers": 1, "pin_memory": True} if use_accel else {}
train = torch.utils.data.DataLoader(data, batch_size=32, shuffle=True, **extra)
test = torch.utils.data.DataLoader(data, batch_size=256, shuffle=False, **extra)

model = torch.nn.Linear(16, 3).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step, (x, y) in enumerate(train):
    x, y = x.to(device), y.to(device)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step + 1 == args.steps:
        break
