"""The worker count from the script's own flag through int(...) (the DCGAN shape): the diff keeps the expression
and changes the flag's default."""

import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--workers", type=int, help="number of data loading workers", default=0)
parser.add_argument("--accel", action="store_true", default=False)
opt = parser.parse_args()
device = torch.accelerator.current_accelerator() if opt.accel and torch.accelerator.is_available() else "cpu"

data = torch.utils.data.TensorDataset(torch.randn(2048, 16), torch.randint(0, 3, (2048,)))
loader = torch.utils.data.DataLoader(data, batch_size=32, shuffle=True, num_workers=int(opt.workers))
model = torch.nn.Linear(16, 3).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step, (x, y) in enumerate(loader):
    loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step == 40:
        break
