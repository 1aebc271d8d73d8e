"""torchvision-reference-style loop (ResNet-18, SGD, fake images) whose two loader workers stall in bursts."""

import gc
import time

import torch
import torchvision
from _common import DEVICE, args, main_truth

VARIANTS = {"data_loading": "8 loader workers", "launch_bound": "model forward/backward as CUDA graphs",
            "data_loading+launch_bound": "both fixes together"}
BATCH = 64


class FakeImages(torch.utils.data.Dataset):
    """Every eighth batch is slow (a cold shard): the loader stalls in bursts."""

    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        if (i // BATCH) % 8 == 0:
            time.sleep(0.002)
        g = torch.Generator().manual_seed(i)
        return torch.rand(3, 112, 112, generator=g), i % 100


def train(steps: int, on_step, variant: str = "base") -> None:
    gc.collect()  # an earlier run's CUDA graphs must be gone before this run's workers fork
    torch.manual_seed(0)
    workers = 8 if "data_loading" in variant else 2
    loader = torch.utils.data.DataLoader(FakeImages(), batch_size=BATCH, num_workers=workers, pin_memory=True,
                                         persistent_workers=True)
    batches = iter(loader)  # workers fork now, before any CUDA graph exists for them to inherit
    model = torchvision.models.resnet18(num_classes=100).to(DEVICE)
    graphed = "launch_bound" in variant and DEVICE.type == "cuda"
    if graphed:  # as `idlehound tune` does: forward and backward replay as CUDA graphs
        with torch.autocast(DEVICE.type, dtype=torch.bfloat16, cache_enabled=False):
            model = torch.cuda.make_graphed_callables(model, (torch.randn(BATCH, 3, 112, 112, device=DEVICE),))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    crit = torch.nn.CrossEntropyLoss()
    for n, (x, y) in enumerate(batches):
        if n >= steps:
            break
        x, y = x.to(DEVICE, non_blocking=True), y.to(DEVICE, non_blocking=True)
        with torch.autocast(DEVICE.type, dtype=torch.bfloat16, cache_enabled=not graphed):
            loss = crit(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        on_step()


if __name__ == "__main__":
    n, v = args()
    if v == "truth":
        main_truth(train, list(VARIANTS), warm=40, steps=64)
    else:
        train(n, lambda: None, v)
