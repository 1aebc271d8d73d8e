"""while-loops that train, asserts, and copies after a pinned loader."""

import torch
from torch.utils.data import DataLoader

device = torch.device("cuda:0")
model = torch.nn.Linear(8, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(torch.randn(4096, 9), batch_size=64, num_workers=2, pin_memory=True)  # expect: none
it = iter(loader)
loss = torch.ones((), device=device)
while loss > 0.05:  # expect: tensor-condition
    batch = next(it).to(device)  # expect: blocking-to
    x, y = batch[:, :8], batch[:, 8:]
    x = x.to(torch.float16).float()  # expect: none
    y = y.cuda(non_blocking=True)  # expect: none
    loss = (model(x) - y).pow(2).mean()
    assert loss is not None  # expect: none
    assert torch.isfinite(loss)  # expect: tensor-condition
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

steps = 0
while steps < 100:  # expect: none
    batch = next(it).to(device, non_blocking=True)  # expect: none
    loss = model(batch[:, :8]).mean()
    loss.backward()
    optimizer.step()
    steps += 1
    if steps == 50:  # expect: none
        print("halfway")
