"""Inference over a DataLoader: no optimizer, steps come from the loader."""

import sys

import torch

ds = torch.utils.data.TensorDataset(torch.randn(512, 16))
loader = torch.utils.data.DataLoader(ds, batch_size=8, num_workers=0)
model = torch.nn.Linear(16, 4)
with torch.no_grad():
    for (x,) in loader:
        model(x).sum()
print("done", len(sys.argv))
