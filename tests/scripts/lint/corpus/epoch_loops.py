"""Epoch loops call train() and scheduler.step(): once per epoch, not per step."""

import torch
import torch.nn.functional as F
from torch.optim.lr_scheduler import StepLR

device = torch.device("cuda")


def train(model, loader, optimizer):
    model.train()
    total = torch.zeros((), device=device)
    for data, target in loader:
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        total += loss.detach()
    return total / len(loader)


def evaluate(model, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in loader:
            out = model(data.to(device))
            correct += out.argmax(1).eq(target.to(device)).sum().item()  # expect: none
    return correct / len(loader.dataset)


def main(model, train_loader, test_loader, epochs):
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    best = 0.0
    for epoch in range(epochs):
        mean_loss = train(model, train_loader, optimizer)
        acc = evaluate(model, test_loader)
        print(f"epoch {epoch} loss {mean_loss:.4f} acc {acc:.3f}")  # expect: none
        if mean_loss.item() < 0.01:  # expect: none
            break
        if acc > best:  # expect: none
            best = acc
            torch.save(model.state_dict(), "best.pt")
        scheduler.step()
    print("final", mean_loss)  # expect: none


def lr_sweep(optimizer, scheduler, steps):
    lrs = []
    for _ in range(steps):
        scheduler.step()
        lrs.append(torch.tensor(scheduler.get_last_lr()).item())  # expect: none
    return lrs
