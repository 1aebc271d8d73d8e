"""Host-bound tiny model: microseconds of GPU work per op; the fix replays the whole step as one CUDA graph."""

import torch
from _common import DEVICE, args, main_truth

VARIANTS = {"launch_bound": "whole step captured in a CUDA graph"}


def _model():
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(128, 128), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(128, 10)).to(DEVICE)


def train(steps: int, on_step, variant: str = "base") -> None:
    torch.manual_seed(0)
    model = _model()
    graphed = variant == "launch_bound" and DEVICE.type == "cuda"
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=graphed)
    xs = torch.randn(16, 64, 128, device=DEVICE)
    ys = torch.randint(0, 10, (16, 64), device=DEVICE)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step(x, y):
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    if not graphed:
        for i in range(steps):
            step(xs[i % 16], ys[i % 16])
            on_step()
        return
    sx, sy = xs[0].clone(), ys[0].clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step(sx, sy)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step(sx, sy)
    for i in range(steps):
        sx.copy_(xs[i % 16])
        sy.copy_(ys[i % 16])
        g.replay()
        on_step()


if __name__ == "__main__":
    n, v = args()
    if v == "truth":
        main_truth(train, list(VARIANTS), warm=20, steps=100)
    else:
        train(n, lambda: None, v)
