"""A tidy CUDA training loop: nothing for idlehound lint to say."""

import torch
from torch.utils.data import DataLoader

torch.backends.cudnn.benchmark = True
device = "cuda"
model = torch.nn.Conv2d(3, 8, 3).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
loader = DataLoader(torch.randn(64, 3, 8, 8), batch_size=8, num_workers=4, pin_memory=True,
                    persistent_workers=True)
running = torch.zeros((), device=device)
for step, x in enumerate(loader):
    x = x.to(device, non_blocking=True)
    loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    running += loss.detach()
    if step % 100 == 0:
        print(f"step {step} loss {loss.item():.4f}")  # every 100 steps: fine
print(f"mean loss {running.item() / (step + 1):.4f}")
