"""Plain data-bound loop: per-sample CPU work in the main process (num_workers=0) feeds a small CNN."""

import numpy as np
import torch
from _common import DEVICE, args, main_truth

VARIANTS = {"data_loading": "8 loader workers, pinned memory", "launch_bound": "model forward/backward as CUDA graphs"}


class Images(torch.utils.data.Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        img = rng.random((3, 96, 96), dtype=np.float32)
        for _ in range(3):  # a CPU "augmentation" pipeline
            img = np.clip(img * 1.1 - 0.05, 0, 1)
            img = (img + np.roll(img, 1, axis=2)) * 0.5
        return torch.from_numpy(img[:, 16:80, 16:80].copy()), i % 10


def train(steps: int, on_step, variant: str = "base") -> None:
    torch.manual_seed(0)
    fixed = variant == "data_loading"
    loader = torch.utils.data.DataLoader(Images(), batch_size=64, shuffle=False, num_workers=8 if fixed else 0,
                                         pin_memory=fixed, persistent_workers=fixed)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(64, 10)).to(DEVICE)
    if variant == "launch_bound" and DEVICE.type == "cuda":  # as `idlehound tune` does
        model = torch.cuda.make_graphed_callables(model, (torch.randn(64, 3, 64, 64, device=DEVICE),))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for n, (x, y) in enumerate(loader):
        if n >= steps:
            break
        x, y = x.to(DEVICE, non_blocking=fixed), y.to(DEVICE, non_blocking=fixed)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        on_step()


if __name__ == "__main__":
    n, v = args()
    if v == "truth":
        main_truth(train, list(VARIANTS), warm=40, steps=40)
    else:
        train(n, lambda: None, v)
