"""Works as written; crashes when its dataset is read in a worker process."""

import torch


class MainOnly(torch.utils.data.Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        assert torch.utils.data.get_worker_info() is None, "this dataset must be read in the main process"
        g = torch.Generator().manual_seed(i)
        return torch.randn(32, generator=g), i % 4


model = torch.nn.Linear(32, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for x, y in torch.utils.data.DataLoader(MainOnly(), batch_size=16):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
