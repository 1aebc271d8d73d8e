"""Not imported by the others, and imports none of them: stays a CPU script."""

import torch

model = torch.nn.Conv2d(1, 1, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in [torch.ones(1, 1, 5, 5)]:
    loss = model(x).sum()
    loss.backward()
    opt.step()
    print(loss.item())
