"""The blog's workload: ResNet18 on CIFAR10 resized to 224, and every optimisation of the ladder.

One training loop, configured by TrainConfig, serves the demo, each ladder rung and the ceiling.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Optional


@dataclass
class TrainConfig:
    batch_size: int = 32
    num_workers: int = 1
    pin_memory: bool = False
    persistent_workers: bool = False
    prefetch_factor: Optional[int] = None
    non_blocking: bool = False
    amp: Optional[str] = None  # None, "fp16" (with GradScaler) or "bf16"
    channels_last: bool = False
    cudnn_benchmark: bool = False
    gpu_preprocess: bool = False  # uint8 32x32 to the GPU; resize and normalise there
    compile: Optional[str] = None  # None, "default", "reduce-overhead"
    in_memory: bool = False  # the ceiling: synthetic batches already on the GPU
    image_size: int = 224
    lr: float = 0.001
    device: str = "cuda"
    data: Optional[str] = None
    per_batch: int = 10000  # synthetic images per training batch file (5 files)
    seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


MEAN = (0.4914, 0.4822, 0.4465)
STD = (0.2470, 0.2435, 0.2616)


def make_loader(cfg: TrainConfig):
    import torch
    from torchvision import transforms as T

    from .cifar import cifar10, ensure_data

    root, synthetic = ensure_data(Path(cfg.data) if cfg.data else None, per_batch=cfg.per_batch)
    if cfg.gpu_preprocess:
        tf = T.PILToTensor()  # uint8, 32x32: resize and normalise happen on the GPU
    else:
        tf = T.Compose([T.Resize(cfg.image_size), T.ToTensor(), T.Normalize(MEAN, STD)])
    ds = cifar10(root, train=True, transform=tf, synthetic=synthetic)
    kw: dict[str, Any] = dict(batch_size=cfg.batch_size, shuffle=True, num_workers=cfg.num_workers,
                              pin_memory=cfg.pin_memory, drop_last=True)
    if cfg.num_workers > 0:
        kw["persistent_workers"] = cfg.persistent_workers
        if cfg.prefetch_factor:
            kw["prefetch_factor"] = cfg.prefetch_factor
    g = torch.Generator()
    g.manual_seed(cfg.seed)
    return torch.utils.data.DataLoader(ds, generator=g, **kw), synthetic


def make_model(cfg: TrainConfig):
    import torch
    from torchvision.models import resnet18

    torch.manual_seed(cfg.seed)
    model = resnet18(weights=None, num_classes=10).to(cfg.device)  # pretrained weights cannot be fetched here
    if cfg.channels_last:
        model = model.to(memory_format=torch.channels_last)
    return model


class Trainer:
    """Builds everything once; `step()` runs one training step and returns the loss tensor (no sync)."""

    def __init__(self, cfg: TrainConfig) -> None:
        import torch

        self.cfg = cfg
        self.torch = torch
        torch.backends.cudnn.benchmark = cfg.cudnn_benchmark
        self.device = torch.device(cfg.device)
        model = make_model(cfg)
        self.opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.9)
        self.model = torch.compile(model, mode=cfg.compile) if cfg.compile else model
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.scaler = torch.amp.GradScaler("cuda") if cfg.amp == "fp16" else None
        self.dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(cfg.amp or "")
        self.synthetic = True
        if cfg.in_memory:
            g = torch.Generator(device="cpu").manual_seed(cfg.seed)
            self._x = torch.randn(cfg.batch_size, 3, cfg.image_size, cfg.image_size, generator=g).to(self.device)
            self._y = torch.randint(0, 10, (cfg.batch_size,), generator=g).to(self.device)
            self.batches = None
        else:
            self.loader, self.synthetic = make_loader(cfg)
            self.batches = self._forever()
        if cfg.gpu_preprocess:
            self._mean = torch.tensor(MEAN, device=self.device).view(1, 3, 1, 1) * 255
            self._std = torch.tensor(STD, device=self.device).view(1, 3, 1, 1) * 255

    def _forever(self):
        while True:
            yield from self.loader

    def _batch(self):
        torch = self.torch
        if self.batches is None:
            return self._x, self._y
        x, y = next(self.batches)
        x = x.to(self.device, non_blocking=self.cfg.non_blocking)
        y = y.to(self.device, non_blocking=self.cfg.non_blocking)
        if self.cfg.gpu_preprocess:
            x = torch.nn.functional.interpolate(x.float(), size=self.cfg.image_size, mode="bilinear",
                                                align_corners=False)
            x = (x - self._mean) / self._std
        return x, y

    def step(self) -> Any:
        torch = self.torch
        x, y = self._batch()
        if self.cfg.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        self.opt.zero_grad(set_to_none=True)
        with torch.autocast(self.device.type, dtype=self.dtype, enabled=self.dtype is not None):
            loss = self.loss_fn(self.model(x), y)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            loss.backward()
            self.opt.step()
        return loss

    def close(self) -> None:
        """Stop loader worker processes now (persistent workers outlive the loop otherwise)."""
        if self.batches is not None:
            self.batches.close()
            it = getattr(self.loader, "_iterator", None)
            if it is not None and hasattr(it, "_shutdown_workers"):
                it._shutdown_workers()
            self.batches = None

    def sync(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize()


def time_steps(trainer: Trainer, warmup: int, steps: int, on_step: Optional[Callable[[], None]] = None) -> dict:
    """Run warmup steps, then time `steps` steps; returns samples/s and ms/step (host wall clock, synced)."""
    for _ in range(warmup):
        trainer.step()
    trainer.sync()
    t0 = time.perf_counter()
    loss = None
    for _ in range(steps):
        loss = trainer.step()
        if on_step:
            on_step()
    trainer.sync()
    dt = time.perf_counter() - t0
    bs = trainer.cfg.batch_size
    return {"steps": steps, "seconds": round(dt, 4), "ms_per_step": round(1e3 * dt / steps, 3),
            "samples_per_s": round(bs * steps / dt, 1), "final_loss": float(loss.detach()) if loss is not None else None}


def baseline(device: str, cpu_small: bool = True) -> TrainConfig:
    """The blog's baseline; on a CPU a smaller image so the demo finishes in seconds."""
    cfg = TrainConfig(device=device)
    if device == "cpu" and cpu_small:
        cfg = replace(cfg, batch_size=8, image_size=64, per_batch=512, num_workers=1)
    return cfg


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
