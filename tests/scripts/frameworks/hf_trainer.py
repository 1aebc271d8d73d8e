"""Tiny HF Trainer run on CPU. argv: [nan_filter on|off] [callback|plain] [logdir] [eval|noeval]."""

import os
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

nan_filter = (sys.argv[1] if len(sys.argv) > 1 else "on") == "on"
use_callback = (sys.argv[2] if len(sys.argv) > 2 else "plain") == "callback"
logdir = sys.argv[3] if len(sys.argv) > 3 else "log"
eval_in_loop = (sys.argv[4] if len(sys.argv) > 4 else "noeval") == "eval"

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=128, n_positions=32))
data = [{"input_ids": ids, "labels": ids} for ids in torch.randint(0, 128, (96, 16))]
args = TrainingArguments(output_dir=f"{logdir}/hf_out", per_device_train_batch_size=4, max_steps=12,
                         logging_steps=50, save_strategy="no", report_to=["tensorboard"] if use_callback else [],
                         use_cpu=True, logging_nan_inf_filter=nan_filter,
                         disable_tqdm=True, dataloader_num_workers=0,
                         eval_strategy="steps" if eval_in_loop else "no", eval_steps=2)
callbacks = []
if use_callback:
    from idlehound.integrations.transformers import IdlehoundCallback

    callbacks.append(IdlehoundCallback(logdir=logdir, skip=3, warmup=1, active=int(os.environ.get("ACTIVE", "3"))))
Trainer(model=model, args=args, train_dataset=data, eval_dataset=data[:8] if eval_in_loop else None,
        callbacks=callbacks).train()
