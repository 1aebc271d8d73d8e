"""GPU-heavy micro-batch loop (fp32, TF32 off) that reads loss.item() after every micro-batch."""

import torch
from _common import DEVICE, args, main_truth

VARIANTS = {"sync": "no .item() inside the step", "fp32_math": "TF32 on"}


def train(steps: int, on_step, variant: str = "base") -> None:
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = variant == "fp32_math"
    width, micro, n_micro = 2048, 1024, 8
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(width, width), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers).to(DEVICE)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=DEVICE.type == "cuda")
    xs = torch.randn(n_micro, micro, width, device=DEVICE)
    total = torch.zeros((), device=DEVICE)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        for i in range(n_micro):
            loss = model(xs[i]).square().mean() / n_micro
            loss.backward()
            if variant == "sync":
                total += loss.detach()
            else:
                total += loss.item()  # the read that drains the queue every micro-batch
        opt.step()
        on_step()
    torch.backends.cuda.matmul.allow_tf32 = False


if __name__ == "__main__":
    n, v = args()
    if v == "truth":
        main_truth(train, list(VARIANTS))
    else:
        train(n, lambda: None, v)
