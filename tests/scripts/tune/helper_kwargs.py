"""Loader options that reach DataLoader through a helper's **kwargs: a diff that adds num_workers beside them
would pass it twice (TypeError), so tune must not show it."""

import torch


def make_loader(dataset, **kw):
    return torch.utils.data.DataLoader(dataset, **kw)


data = torch.utils.data.TensorDataset(torch.randn(512, 8), torch.randint(0, 2, (512,)))
model = torch.nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in make_loader(data, batch_size=16, num_workers=0):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
