"""A device-agnostic script: torch.accelerator, never the word c-u-d-a."""

import torch
from torch.utils.data import DataLoader, TensorDataset

device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.Flatten(), torch.nn.LazyLinear(10)).to(device)  # expect: cudnn-benchmark-off
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=False)  # expect: optimizer-not-fused
data = TensorDataset(torch.randn(512, 3, 32, 32), torch.randint(0, 10, (512,)))
loader = DataLoader(data, batch_size=64, shuffle=True)  # expect: dataloader-no-workers, dataloader-no-pin-memory
losses = []
for epoch in range(3):
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)  # expect: none
        logits = model(images)
        loss = torch.nn.functional.cross_entropy(logits, labels)
        opt.zero_grad(set_to_none=False)  # expect: zero-grad-not-none
        loss.backward()
        opt.step()
        losses.append(loss.item())  # expect: item-in-loop
        host_logits = logits.detach().cpu()  # expect: cpu-in-loop
        preds = logits.argmax(1).tolist()  # expect: tolist-in-loop
        torch.accelerator.synchronize()  # expect: synchronize-in-loop
    print(f"epoch {epoch}: mean loss {sum(losses) / len(losses):.4f}")  # expect: none
