"""A stand-in for the part of Lightning that tune touches (no Lightning on the CPU test machines): a Trainer whose
fit() runs the training loop with the precision and benchmark it was built with."""

from .pytorch import LightningModule, Trainer

__all__ = ["LightningModule", "Trainer"]
