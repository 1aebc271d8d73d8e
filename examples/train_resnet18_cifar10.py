"""The textbook baseline the project grew from: ResNet18 on CIFAR10 resized to 224, batch 32, one loader worker,
fp32, SGD (lr 0.001, momentum 0.9). A plain training script: run it with `idlehound run` or `idlehound tune`.

    python examples/train_resnet18_cifar10.py --data ~/data        # folder holding cifar-10-batches-py
"""

import argparse

import torch
import torchvision
import torchvision.transforms as T

parser = argparse.ArgumentParser()
parser.add_argument("--data", default=None, help="folder with cifar-10-batches-py (default: a synthetic copy)")
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--workers", type=int, default=1)
parser.add_argument("--image-size", type=int, default=224)
parser.add_argument("--epochs", type=int, default=1)
args = parser.parse_args()

device = "cuda" if torch.cuda.is_available() else "cpu"
transform = T.Compose([T.Resize(args.image_size), T.ToTensor(),
                       T.Normalize((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616))])
if args.data:
    dataset = torchvision.datasets.CIFAR10(args.data, train=True, transform=transform, download=False)
else:  # nothing can be downloaded here: the same files, written synthetically, read by torchvision itself
    from idlehound.workloads.cifar import cifar10, ensure_data

    root, synthetic = ensure_data(None, per_batch=10000 if device == "cuda" else 500)
    dataset = cifar10(root, train=True, transform=transform, synthetic=synthetic)
loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers)

model = torchvision.models.resnet18(num_classes=10).to(device)
criterion = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)

model.train()
for epoch in range(args.epochs):
    for step, (inputs, labels) in enumerate(loader):
        inputs, labels = inputs.to(device), labels.to(device)
        outputs = model(inputs)
        loss = criterion(outputs, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
