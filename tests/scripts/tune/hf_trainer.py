"""A transformers.Trainer script (on the CPU test machines it runs against the stand-in in fake_hf/)."""

import torch
from transformers import Trainer, TrainingArguments

extra = {"logging_steps": 10}
args = TrainingArguments(output_dir="out", per_device_train_batch_size=16, dataloader_num_workers=0, **extra)
torch.manual_seed(0)
model = torch.nn.Linear(8, 2)
data = torch.utils.data.TensorDataset(torch.randn(1024, 8), torch.randint(0, 2, (1024,)))
Trainer(model=model, args=args, train_dataset=data).train()
