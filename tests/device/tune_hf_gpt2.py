"""HF Trainer on a small GPT-2 built from its config, fp32, random tokens, the loss logged every step: the
Trainer script tests/device/tune_h200.py tunes (TUNE_H200_TINY=1: a tiny model for the CPU)."""

import os
import tempfile

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

TINY = os.environ.get("TUNE_H200_TINY") == "1"
SEQ = 32 if TINY else 256


class Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        ids = torch.randint(0, 8192, (SEQ,), generator=torch.Generator().manual_seed(i))
        return {"input_ids": ids, "labels": ids}


torch.manual_seed(0)
config = GPT2Config(
    n_layer=1 if TINY else 6,
    n_embd=32 if TINY else 512,
    n_head=2 if TINY else 8,
    n_positions=SEQ,
    vocab_size=8192,
)
model = GPT2LMHeadModel(config)
args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    max_steps=100_000,
    per_device_train_batch_size=4 if TINY else 16,
    learning_rate=3e-4,
    logging_steps=1,
    report_to=[],
    save_strategy="no",
    disable_tqdm=True,
    dataloader_num_workers=0,
    seed=0,
    use_cpu=not torch.cuda.is_available(),
)
Trainer(model=model, args=args, train_dataset=Tokens()).train()
