"""A conv net on the GPU with cudnn.benchmark set: nothing to say about cuDNN."""

import torch
import torchvision

torch.backends.cudnn.benchmark = True
net = torchvision.models.resnet18(num_classes=10).cuda()  # expect: none
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)  # expect: none
running = torch.zeros((), device="cuda")
for step in range(100):
    x = torch.randn(64, 3, 32, 32, device="cuda")
    y = torch.randint(0, 10, (64,), device="cuda")
    loss = torch.nn.functional.cross_entropy(net(x), y)
    opt.zero_grad()  # expect: none
    loss.backward()
    opt.step()
    running += loss.detach()  # expect: none
    if step % 20 == 0:
        print(f"step {step} mean loss {running.item() / (step + 1):.4f}")  # expect: none
print(f"done: {running.item() / 100:.4f}")  # expect: none
