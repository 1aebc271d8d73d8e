"""Planted: a convolution-heavy model with cudnn.benchmark explicitly off."""

import torch
import torchvision
from _common import DEVICE, SMALL, STEPS

torch.backends.cudnn.benchmark = False
model = torchvision.models.resnet18(num_classes=10).to(DEVICE).to(memory_format=torch.channels_last)
opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, foreach=True)
batch, size = (4, 32) if SMALL else (256, 224)
x = torch.randn(batch, 3, size, size, device=DEVICE).contiguous(memory_format=torch.channels_last)
y = torch.randint(0, 10, (batch,), device=DEVICE)
for step in range(STEPS):
    with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
