"""The loop is here; backward() and step() live in steps.py: still a training loop."""

import steps
import torch
from steps import Stepper, train_step

device = torch.device("cuda")
model = torch.nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in [torch.ones(4)] * 10:
    x = x.to(device, non_blocking=True)
    if model(x).sum() > 0:
        pass
    value = train_step(model, opt, x)

stepper = Stepper(model, opt)
for x in [torch.ones(4)] * 10:
    stepper.step(x.to(device, non_blocking=True))
    print(steps.last_loss(model, x))
