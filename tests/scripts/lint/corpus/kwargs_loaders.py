"""Loader options passed through dicts, as the MNIST and VAE examples do."""

import argparse

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--workers", type=int, default=4)
args = parser.parse_args()
use_cuda = torch.cuda.is_available()
device = torch.device("cuda" if use_cuda else "cpu")
tf = transforms.ToTensor()
train_set = datasets.MNIST("../data", train=True, download=True, transform=tf)
test_set = datasets.MNIST("../data", train=False, transform=tf)

train_kwargs = {"batch_size": args.batch_size}
test_kwargs = {"batch_size": 1000}
if use_cuda:
    cuda_kwargs = {"num_workers": 1, "pin_memory": True, "shuffle": True}
    train_kwargs.update(cuda_kwargs)
    test_kwargs.update(cuda_kwargs)
train_loader = DataLoader(train_set, **train_kwargs)  # expect: none
test_loader = DataLoader(test_set, **test_kwargs)  # expect: none

kwargs = {"num_workers": 1, "pin_memory": True} if use_cuda else {}
extra_loader = DataLoader(train_set, batch_size=32, shuffle=True, **kwargs)  # expect: none

opts = dict(batch_size=64, shuffle=True)
opts["num_workers"] = args.workers
opts["pin_memory"] = True
third = DataLoader(train_set, **opts)  # expect: none

base = dict(batch_size=64, num_workers=args.workers)
fourth = DataLoader(train_set, **base)  # expect: dataloader-no-pin-memory

plain = {"batch_size": 128, "shuffle": True}
fifth = DataLoader(train_set, **plain)  # expect: dataloader-no-workers, dataloader-no-pin-memory

zero = DataLoader(train_set, batch_size=64, num_workers=0, pin_memory=True)  # expect: dataloader-no-workers


def make_loader(dataset, **loader_kwargs):
    return DataLoader(dataset, **loader_kwargs)  # expect: none


merged = {**train_kwargs, "drop_last": True}
sixth = DataLoader(train_set, **merged)  # expect: none
