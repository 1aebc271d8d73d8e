"""A small convolutional net that sets cudnn.benchmark itself."""

import torch

torch.backends.cudnn.benchmark = True
model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Conv2d(4, 2, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(2, 3, 12, 12)
for step in range(50):
    loss = model(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
