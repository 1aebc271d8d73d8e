"""Held-out lint set: an image classifier trained with Accelerate, never naming a device (cv_example style)."""

import time

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

LOG_FMT = "step %d loss %.4f acc %.3f"


def build(accelerator):
    tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.ToTensor()])
    train_ds = datasets.ImageFolder("data/train", transform=tf)
    val_ds = datasets.ImageFolder("data/val", transform=tf)
    train_dl = DataLoader(train_ds, batch_size=64, shuffle=True, num_workers=8)  # expect: none
    val_dl = DataLoader(val_ds, batch_size=128, num_workers=8)  # expect: none
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3, stride=2), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10))  # expect: cudnn-benchmark-off
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return accelerator.prepare(model, optimizer, train_dl, val_dl)


def main():
    accelerator = Accelerator()
    model, optimizer, train_dl, val_dl = build(accelerator)
    criterion = torch.nn.CrossEntropyLoss()
    for epoch in range(10):
        model.train()
        start = time.time()
        for step, (images, labels) in enumerate(train_dl):
            logits = model(images)
            loss = criterion(logits, labels)
            optimizer.zero_grad()
            accelerator.backward(loss)
            optimizer.step()
            acc = (logits.argmax(1) == labels).float().mean()
            stats = (step, loss, acc)
            print(LOG_FMT % stats)  # expect: print-tensor
            if torch.isnan(loss):  # expect: tensor-condition
                raise RuntimeError("loss is nan")
        took = time.time() - start
        model.eval()
        correct = 0
        for images, labels in val_dl:
            with torch.no_grad():
                preds = model(images).argmax(1)
            correct += accelerator.gather(preds == labels).sum().item()  # expect: none
        accelerator.print(f"epoch {epoch}: {took:.1f} s, val acc {correct / len(val_dl.dataset):.3f}")  # expect: none


if __name__ == "__main__":
    main()
