"""Record a small CPU training trace with whatever torch this interpreter has (for the compatibility table).

    /path/to/old/venv/bin/python benchmarks/record_cpu_trace.py OUT_DIR [--workers N]

Needs only torch: run it from a separate venv that holds an older PyTorch release, then analyse OUT_DIR with
idlehound. A DataLoader that sleeps per sample makes data loading the cause to find; ProfilerStep comes from
prof.step().
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler


class SlowData(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 4096

    def __getitem__(self, i: int):
        time.sleep(0.0005)  # decode/augment stand-in: 8 ms per batch of 16
        return torch.randn(64), i % 4


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--workers", type=int, default=0)
    args = ap.parse_args()
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(SlowData(), batch_size=16, num_workers=args.workers)
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
        on_trace_ready=tensorboard_trace_handler(args.out, worker_name=f"torch{torch.__version__}"),
    ) as prof:
        for step, (x, y) in enumerate(loader):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step()
            if step >= 6:
                break
    print(f"torch {torch.__version__}: trace written under {args.out}")


if __name__ == "__main__":
    main()
