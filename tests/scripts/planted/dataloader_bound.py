"""Planted: the blog's loader (num_workers=0, CPU resize to 224) starves a ResNet18."""

import sys

from idlehound.workloads.resnet import TrainConfig, Trainer

workers = int(sys.argv[2]) if len(sys.argv) > 2 else 0
cfg = TrainConfig(batch_size=32, num_workers=workers, per_batch=2000)
if not __import__("torch").cuda.is_available():
    cfg = TrainConfig(device="cpu", batch_size=4, num_workers=workers, image_size=64, per_batch=256)
trainer = Trainer(cfg)
for step in range(int(sys.argv[1]) if len(sys.argv) > 1 else 30):
    trainer.step()
