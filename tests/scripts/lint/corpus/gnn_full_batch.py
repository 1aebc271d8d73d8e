"""GAT/GCN shape: full-batch, so the epoch loop is the step loop; train_iter evaluates every step."""

import torch
import torch.nn as nn
from torch.optim import Adam


def train_iter(epoch, model, optimizer, criterion, inputs, target, mask_train, mask_val, print_every=10):
    model.train()
    optimizer.zero_grad()
    output = model(*inputs)
    loss = criterion(output[mask_train], target[mask_train])
    loss.backward()
    optimizer.step()
    loss_train, acc_train = test(model, criterion, inputs, target, mask_train)
    loss_val, acc_val = test(model, criterion, inputs, target, mask_val)
    if epoch % print_every == 0:
        print(f"epoch {epoch} loss {loss_train:.4f} acc {acc_train:.4f} val {loss_val:.4f}")  # expect: none
    if loss_val > 10.0:  # expect: none
        print("validation loss is high")


def test(model, criterion, inputs, target, mask):
    model.eval()
    with torch.no_grad():
        output = model(*inputs)
        loss = criterion(output[mask], target[mask])
        acc = (output[mask].argmax(dim=1) == target[mask]).float().sum() / len(target)
    return loss.item(), acc.item()  # expect: item-in-loop


if __name__ == "__main__":
    device = torch.accelerator.current_accelerator()
    features = torch.randn(100, 16).to(device)
    adj = torch.ones(100, 100).to(device)
    labels = torch.randint(0, 4, (100,)).to(device)
    idx = torch.randperm(100).to(device)
    net = nn.Linear(16, 4).to(device)
    num_classes = labels.max().item() + 1  # expect: none
    optimizer = Adam(net.parameters(), lr=0.01)  # expect: none
    criterion = nn.CrossEntropyLoss()
    for epoch in range(200):
        train_iter(epoch + 1, lambda f, a: net(f), optimizer, criterion, (features, adj), labels, idx[:50], idx[50:])
    loss_test, acc_test = test(lambda f, a: net(f), criterion, (features, adj), labels, idx[50:])
    print(f"test loss {loss_test:.4f} accuracy {acc_test:.4f}")  # expect: none
