"""A torchvision builder with cudnn.benchmark taken from a flag: the user chose, nothing to say."""

import argparse

import torch
from torchvision.models import resnet50

parser = argparse.ArgumentParser()
parser.add_argument("--benchmark", action="store_true")
args = parser.parse_args()
torch.backends.cudnn.benchmark = args.benchmark
model = resnet50().to("cuda")  # expect: none
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x = torch.randn(8, 3, 224, 224, device="cuda")
    loss = model(x).logsumexp(1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
