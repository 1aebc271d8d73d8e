"""A stand-in for the few parts of transformers that tune touches (no transformers on the CPU test machines):
a TrainingArguments dataclass and a Trainer whose loop builds its DataLoader from those arguments."""

from .trainer import Trainer
from .training_args import TrainingArguments

__all__ = ["Trainer", "TrainingArguments"]
