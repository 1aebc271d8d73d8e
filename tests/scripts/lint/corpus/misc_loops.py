"""Written blind (before running lint on it): grad norms, distributed loss reads, early exits, copies."""

import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def build_loaders(train_set, val_set, batch_size):
    train = DataLoader(train_set, batch_size, True, None, None, 4, pin_memory=True)  # expect: none
    val = DataLoader(val_set, batch_size=batch_size, num_workers=os.cpu_count(), pin_memory=True)  # expect: none
    return train, val


def train(model, optimizer, scaler, train_loader, rank, epoch, args):
    model.train()
    correct = 0
    total = 0
    for i, (x, y) in enumerate(train_loader):
        x = x.cuda()  # expect: blocking-to
        y = y.to(device, non_blocking=True)  # expect: none
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(x)
            loss = torch.nn.functional.cross_entropy(out, y)
        scaler.scale(loss).backward()
        grad_norm = 0.0
        for p in model.parameters():
            if p.grad is not None:  # expect: none
                grad_norm += p.grad.norm().item() ** 2  # expect: item-in-loop
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        dist.all_reduce(loss)
        if rank == 0:  # expect: none
            print("loss", loss.item())  # expect: item-in-loop
        pred = out.argmax(1)
        correct += (pred == y).sum()  # expect: none
        total += y.size(0)
        if (pred == 0).all():  # expect: tensor-condition
            print("collapsed to class 0")
        value = float(loss.detach())  # expect: float-int-of-tensor
        lr = float(args.lr)  # expect: none
        warm = int(len(train_loader) * 0.1)  # expect: none
        labels_host = y.tolist()  # expect: tolist-in-loop
        if i % args.save_every == 0:
            torch.save(model.cpu().state_dict(), f"ckpt_{epoch}_{i}.pt")  # expect: none
            model.to(device)
        if torch.isnan(loss):  # expect: tensor-condition
            raise RuntimeError(f"nan at step {i}")
    acc = correct / total
    print(f"epoch {epoch} acc {acc:.3f}")  # expect: none
    return acc, value, lr, warm, labels_host


def validate(model, scheduler, val_loader):
    val_loss = torch.zeros((), device=device)
    with torch.no_grad():
        for x, y in val_loader:
            val_loss += torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
    scheduler.step(val_loss)  # expect: none
    return val_loss
