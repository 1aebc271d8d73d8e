"""A script split over files: the pinned loader and the GPU here, the loop in helpers.py, the convs in model.py."""

import torch
from helpers import train
from model import Net
from torch.utils.data import DataLoader

device = torch.device("cuda")
loader = DataLoader(torch.randn(256, 1, 28, 28), batch_size=32, num_workers=2, pin_memory=True)
net = Net().to(device)
train(net, torch.optim.SGD(net.parameters(), lr=0.1), loader, device)
