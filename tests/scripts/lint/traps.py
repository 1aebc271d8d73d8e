"""Every trap idlehound lint knows, each on a known line; one silenced; one .item() after training (fine)."""

import torch
from torch.utils.data import DataLoader

device = "cuda"
model = torch.nn.Conv2d(3, 8, 3).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)
loader = DataLoader(torch.randn(64, 3, 8, 8), batch_size=8)
for x in loader:
    x = x.to(device)
    loss = model(x).square().mean()
    opt.zero_grad(set_to_none=False)
    loss.backward()
    opt.step()
    print(loss)
    print(f"loss {loss}")
    v = loss.item()
    host = loss.cpu()
    arr = loss.detach().cpu().numpy()
    vals = loss.tolist()
    f = float(loss)
    if loss > 10:
        break
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    quiet = loss.item()  # idlehound: ignore[IH001]
final = loss.item()
print("done", final)
