"""HF Trainer on a GPT-2 built from its config, random tokens, bf16, for the H200 check of issue 18.

`gpu_hf.py record STEPS`: one run with the defaults (logging_nan_inf_filter=True: the Trainer reads the loss
every step). `gpu_hf.py ab ROUNDS`: interleaved A/B without the profiler, CUDA-event step times after warm-up,
printing `AB {...}`. FW_TINY=1 shrinks everything for a CPU check of the script itself.
"""

import os
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay"))
from _common import DEVICE, StepTimer  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments  # noqa: E402

TINY = os.environ.get("FW_TINY") == "1"
SEQ, BATCH = (16, 4) if TINY else (512, 32)
# variant -> TrainingArguments that differ from the base (the Trainer's defaults: filter on, logging_steps=500)
VARIANTS = {"base": {}, "nan_filter_off": {"logging_nan_inf_filter": False}}


class Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        ids = torch.randint(0, 8192, (SEQ,), generator=torch.Generator().manual_seed(i))
        return {"input_ids": ids, "labels": ids}


class _Step(TrainerCallback):
    def __init__(self, on_step):
        self.on_step = on_step

    def on_step_end(self, args, state, control, **kw):
        self.on_step()


def model() -> GPT2LMHeadModel:
    torch.manual_seed(0)
    if TINY:
        return GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, n_positions=SEQ, vocab_size=8192))
    return GPT2LMHeadModel(GPT2Config(n_layer=12, n_embd=768, n_head=12, n_positions=SEQ, vocab_size=8192))


def train(m, steps: int, variant: str, on_step=None) -> None:
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=out, max_steps=steps, per_device_train_batch_size=BATCH, bf16=True,
                                 learning_rate=3e-4, report_to=[], save_strategy="no", disable_tqdm=True,
                                 dataloader_num_workers=0, seed=0, use_cpu=DEVICE.type != "cuda",
                                 **VARIANTS[variant])
        cbs = [_Step(on_step)] if on_step else []
        Trainer(model=m, args=args, train_dataset=Tokens(), callbacks=cbs).train()


def ab(rounds: int, warm: int, steps: int) -> dict:
    """Each round runs every variant, alternating the order (ABBA) so drift does not favour one."""
    m, out = model(), {v: [] for v in VARIANTS}
    for r in range(rounds):
        for v in (list(VARIANTS) if r % 2 == 0 else list(VARIANTS)[::-1]):
            timer = StepTimer()
            train(m, warm + steps + 1, v, timer)
            ms = timer.step_ms(warm)
            out[v].append(sum(ms) / len(ms))
    return out


if __name__ == "__main__":
    import json

    mode, n = sys.argv[1], int(sys.argv[2])
    if mode == "record":
        train(model(), n, "base")
    else:
        print("AB " + json.dumps(ab(n, warm=3 if TINY else 10, steps=4 if TINY else 30)), flush=True)
