"""The lint rules' catalogue (id, name, why, fix) and the finding one rule makes at one line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    why: str
    fix: str


RULES: dict[str, Rule] = {
    r.id: r
    for r in [
        Rule(
            "IH001",
            "item-in-loop",
            "`.item()` copies a GPU value to the host and waits for all queued GPU work",
            "keep the value on the GPU (`total += loss.detach()`) and call .item() every N steps",
        ),
        Rule(
            "IH002",
            "cpu-in-loop",
            "`.cpu()` copies a GPU tensor to the host and waits for the GPU",
            "copy only every N steps, or into pinned memory with non_blocking=True",
        ),
        Rule(
            "IH003",
            "numpy-in-loop",
            "`.numpy()` needs the tensor on the host: a blocking copy from the GPU",
            "keep the computation in torch on the GPU; convert every N steps",
        ),
        Rule(
            "IH004",
            "tolist-in-loop",
            "`.tolist()` copies a GPU tensor to the host and waits for the GPU",
            "keep the values on the GPU; convert every N steps",
        ),
        Rule(
            "IH005",
            "print-tensor",
            "printing or formatting a tensor reads its values on the host (several syncs)",
            'print a Python number every N steps: `print(f"{loss.item():.4f}")` inside `if step % 100 == 0`',
        ),
        Rule(
            "IH006",
            "float-int-of-tensor",
            "`float(t)` / `int(t)` of a tensor is a hidden `.item()`: a sync",
            "keep it as a tensor, or read it every N steps",
        ),
        Rule(
            "IH007",
            "tensor-condition",
            "a tensor in an `if`/`while` condition must be read on the host: a sync",
            "decide on the GPU (`torch.where`) or check every N steps",
        ),
        Rule(
            "IH008",
            "synchronize-in-loop",
            "`torch.cuda.synchronize()` waits for all GPU work every step",
            "remove it; time with CUDA events (torch.cuda.Event) if that is what it was for",
        ),
        Rule(
            "IH009",
            "empty-cache-in-loop",
            "`torch.cuda.empty_cache()` returns cached memory, so the next step "
            "must cudaMalloc again (and cudaFree synchronizes)",
            "remove it from the loop",
        ),
        Rule(
            "IH010",
            "dataloader-no-workers",
            "a DataLoader without `num_workers` loads every batch in the training "
            "process while the GPU waits",  # N: the count diagnose.dataloader.suggested_workers() gives
            "DataLoader(..., num_workers=N, persistent_workers=True), N = half the cores, 2 to 16",
        ),
        Rule(
            "IH011",
            "dataloader-no-pin-memory",
            "without `pin_memory=True` host-to-device copies come from pageable "
            "memory: slower, and they block the host",
            "DataLoader(..., pin_memory=True) and .to(device, non_blocking=True)",
        ),
        Rule(
            "IH012",
            "blocking-to",
            "`.to(device)` without `non_blocking=True` after a pinned loader blocks the host "
            "until the copy is done",
            "x = x.to(device, non_blocking=True)",
        ),
        Rule(
            "IH013",
            "zero-grad-not-none",
            "`zero_grad(set_to_none=False)` launches a memset kernel per parameter",
            "opt.zero_grad(set_to_none=True) (the default)",
        ),
        Rule(
            "IH014",
            "optimizer-not-fused",
            "`foreach=False` makes this optimizer launch small kernels per parameter "
            "and op (the default on CUDA is the multi-tensor path)",
            "drop foreach=False, or pass fused=True",
        ),
        Rule(
            "IH015",
            "cudnn-benchmark-off",
            "convolutions without `torch.backends.cudnn.benchmark = True` use cuDNN's "
            "heuristic algorithm instead of the fastest for your shapes",
            "torch.backends.cudnn.benchmark = True",
        ),
        Rule(
            "IH016",
            "collective-in-loop",
            "`accelerator.wait_for_everyone()` / `dist.barrier()` / `accelerator.gather(...)` / `.reduce(...)` / "
            "`.check_trigger()` every step makes "
            "every process wait for the slowest one, and a gather copies every rank's tensor each step",
            "gather and wait once per epoch or every N steps; keep per-step values on the device "
            "(`total += loss.detach()`)",
        ),
    ]
}


@dataclass
class LintFinding:
    rule: str
    file: str
    line: int
    col: int
    text: str
    via: str = ""  # where in a module read for the project view the fact is (`via f: engine.py:42 ...`)

    @property
    def info(self) -> Rule:
        return RULES[self.rule]

    def to_json(self) -> dict[str, Any]:
        r = self.info
        return {
            "rule": self.rule,
            "name": r.name,
            "file": self.file,
            "line": self.line,
            "col": self.col,
            "code": self.text,
            "why": f"{r.why} ({self.via})" if self.via else r.why,
            "fix": r.fix,
        }
