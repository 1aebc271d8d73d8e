"""Shared bits of the planted-cause scripts: device, sizes (small on CPU), a step count from argv."""

import os
import sys

import torch

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
SMALL = DEVICE.type == "cpu" or os.environ.get("IDLEHOUND_SMALL") == "1"
STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 30


def mlp(width: int, depth: int) -> torch.nn.Module:
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).to(DEVICE)
