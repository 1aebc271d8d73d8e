import torch

from .trainer.trainer import Trainer

LightningModule = torch.nn.Module

__all__ = ["LightningModule", "Trainer"]
