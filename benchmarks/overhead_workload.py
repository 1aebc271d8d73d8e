"""A training loop that times itself: prints BENCH {json} with samples/s of steps [measure_from, steps).

Workloads: "resnet" (ResNet18 bf16 channels_last, batch 256, data on the GPU: GPU-bound and fast) and
"small" (a launch-bound MLP, where any per-step host overhead shows most).
"""

import json
import sys
import time

import torch

kind, steps, measure_from = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
if kind == "resnet":
    import torchvision

    batch = 256 if dev.type == "cuda" else 4
    size = 224 if dev.type == "cuda" else 32
    model = torchvision.models.resnet18(num_classes=10).to(dev).to(memory_format=torch.channels_last)
    x = torch.randn(batch, 3, size, size, device=dev).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 10, (batch,), device=dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    torch.backends.cudnn.benchmark = True

    def step():
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
else:
    batch = 32
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(dev)
    x = torch.randn(batch, 256, device=dev)
    opt = torch.optim.Adam(model.parameters(), foreach=True)

    def step():
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


def sync():
    if dev.type == "cuda":
        torch.cuda.synchronize()


t0 = None
for i in range(steps):
    if i == measure_from:
        sync()
        t0 = time.perf_counter()
    step()
sync()
dt = time.perf_counter() - t0
print(
    "BENCH "
    + json.dumps(
        {
            "kind": kind,
            "samples_per_s": batch * (steps - measure_from) / dt,
            "ms_per_step": 1e3 * dt / (steps - measure_from),
        }
    ),
    flush=True,
)
