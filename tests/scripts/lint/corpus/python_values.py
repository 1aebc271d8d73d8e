# ruff: noqa: UP031, UP032
"""Python floats, ints and strings in `if` and `print` inside a training loop: not tensors, no sync."""

import time

import torch

device = "cuda"
model = torch.nn.Linear(64, 8).to(device)
criterion = torch.nn.CrossEntropyLoss()
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)  # expect: none
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10)
loader = [(torch.randn(32, 64), torch.randint(0, 8, (32,))) for _ in range(10)]
best_time = float("inf")
seen = 0
for step, (x, y) in enumerate(loader):
    t0 = time.perf_counter()
    x, y = x.to(device), y.to(device)
    out = model(x)
    loss = criterion(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    lr = sched.get_last_lr()[0]
    elapsed = time.perf_counter() - t0
    seen += len(x)
    name = "warmup" if step < 5 else "train"
    if elapsed > 1.0:  # expect: none
        print(f"slow step {step}: {elapsed:.2f}s")  # expect: none
    if lr < 1e-5 and seen > 1000:  # expect: none
        break
    print(f"{name} step {step} lr {lr:.2e}")  # expect: none
    print("seen", seen, "samples")  # expect: none
    print("step %d of %d" % (step, len(loader)))  # expect: none
    ratio = float(seen) / (step + 1)  # expect: none
    if loss > 10:  # expect: tensor-condition
        print("diverged")
    print("loss", loss)  # expect: print-tensor
    print("loss %.4f" % loss)  # expect: print-tensor
    acc = (out.argmax(1) == y).float().mean()
    print("acc {:.3f}".format(acc))  # expect: print-tensor
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if grad_norm > 5.0:  # expect: tensor-condition
        pass
    if torch.isnan(loss).any():  # expect: tensor-condition
        break
    value = float(loss)  # expect: float-int-of-tensor
    best_time = min(best_time, elapsed)
    if best_time < 0.001:  # expect: none
        pass
sched.step()
