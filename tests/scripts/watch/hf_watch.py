"""transformers Trainer with IdlehoundCallback(watch=...): a later window every 40 steps (tests/test_watch.py)."""

import sys

import torch
from torch import nn
from transformers import Trainer, TrainingArguments

from idlehound.capture import WatchOptions
from idlehound.integrations.transformers import IdlehoundCallback


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(32, 4)

    def forward(self, x, labels):
        return {"loss": nn.functional.cross_entropy(self.net(x), labels)}


data = [{"x": torch.randn(32), "labels": int(i % 4)} for i in range(480)]
args = TrainingArguments(sys.argv[1] + "/out", per_device_train_batch_size=4, num_train_epochs=1, report_to=[],
                         use_cpu=True, save_strategy="no", logging_strategy="no", disable_tqdm=True)
cb = IdlehoundCallback(sys.argv[1], skip=3, warmup=1, active=2, watch=WatchOptions(every=40, steps=2, cooldown=0))
Trainer(model=Tiny(), args=args, train_dataset=data, callbacks=[cb]).train()
print("RUN", cb.run_dir)
