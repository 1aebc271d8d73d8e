"""A transformers.Trainer script whose batches are padded (token ids and an attention mask, as a collator that
pads to a fixed length gives): the case group_by_length is for. Runs against the stand-in in fake_hf/ on the CPU."""

import torch
from transformers import Trainer, TrainingArguments

LENGTH = 32


class Padded(torch.utils.data.Dataset):
    def __len__(self):
        return 1024

    def __getitem__(self, i):
        n = 4 + (i * 7) % (LENGTH - 4)  # 4-31 real tokens, the rest padding
        ids = torch.zeros(LENGTH, dtype=torch.long)
        ids[:n] = torch.randint(1, 100, (n,), generator=torch.Generator().manual_seed(i))
        return {"input_ids": ids, "attention_mask": (ids > 0).long(), "labels": torch.tensor(i % 2)}


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(100, 16)
        self.head = torch.nn.Linear(16, 2)

    def forward(self, input_ids, attention_mask, labels):
        m = attention_mask.unsqueeze(-1).float()
        pooled = (self.embed(input_ids) * m).sum(1) / m.sum(1)
        return torch.nn.functional.cross_entropy(self.head(pooled), labels)


args = TrainingArguments(output_dir="out", per_device_train_batch_size=16, dataloader_num_workers=0)
torch.manual_seed(0)
Trainer(model=Model(), args=args, train_dataset=Padded()).train()
