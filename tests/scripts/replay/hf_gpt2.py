"""Hugging Face Trainer on a small GPT-2 built from its config; random tokens; logs the loss every step."""

import tempfile

import torch
from _common import args, main_truth
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

VARIANTS = {
    "sync": "logging_steps=1000 (no loss read per step)",
    "data_loading": "dataloader_num_workers=4",
    "launch_bound": "torch_compile=True (inductor, default mode: fused kernels)",
    "launch_graphs": 'torch_compile=True, torch_compile_mode="reduce-overhead" (CUDA graphs)',
}
SEQ = 256


class Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, 8192, (SEQ,), generator=g)
        return {"input_ids": ids, "labels": ids}


class _Step(TrainerCallback):
    def __init__(self, on_step):
        self.on_step = on_step

    def on_step_end(self, args, state, control, **kw):
        self.on_step()


def train(steps: int, on_step, variant: str = "base") -> None:
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=6, n_embd=512, n_head=8, n_positions=SEQ, vocab_size=8192)
    model = GPT2LMHeadModel(cfg)
    with tempfile.TemporaryDirectory() as out:
        targs = TrainingArguments(
            output_dir=out, max_steps=steps, per_device_train_batch_size=16, bf16=True, learning_rate=3e-4,
            logging_steps=1000 if variant == "sync" else 1, report_to=[], save_strategy="no", disable_tqdm=True,
            dataloader_num_workers=4 if variant == "data_loading" else 0, seed=0,
            torch_compile=variant.startswith("launch_"),
            torch_compile_mode="reduce-overhead" if variant == "launch_graphs" else None)
        Trainer(model=model, args=targs, train_dataset=Tokens(), callbacks=[_Step(on_step)]).train()


if __name__ == "__main__":
    n, v = args()
    if v == "truth":
        main_truth(train, list(VARIANTS), warm=10, steps=40)
    else:
        train(n, lambda: None, v)
