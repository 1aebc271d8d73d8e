"""ImageNet shape: a torchvision model picked by name; cudnn.benchmark only ever set to False (seeded runs)."""

import argparse

import torch
import torch.backends.cudnn as cudnn
import torchvision.models as models

parser = argparse.ArgumentParser()
parser.add_argument("--arch", default="resnet18")
parser.add_argument("--seed", type=int, default=None)
args = parser.parse_args()
if args.seed is not None:
    torch.manual_seed(args.seed)
    cudnn.deterministic = True
    cudnn.benchmark = False
model = models.__dict__[args.arch]().cuda()  # expect: cudnn-benchmark-off
optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, weight_decay=1e-4)  # expect: none
for i in range(10):
    images = torch.randn(32, 3, 224, 224).cuda(non_blocking=True)
    target = torch.randint(0, 1000, (32,)).cuda(non_blocking=True)
    loss = torch.nn.functional.cross_entropy(model(images), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
