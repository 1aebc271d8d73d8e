import torch


class Trainer:
    def __init__(self, max_steps=-1, precision="32-true", benchmark=None):
        self.max_steps, self.precision, self.benchmark = max_steps, precision, benchmark

    def fit(self, model, loader):
        if self.benchmark is not None:
            torch.backends.cudnn.benchmark = self.benchmark
        opt = model.configure_optimizers()
        dtype = torch.bfloat16 if self.precision == "bf16-mixed" else None
        for step, (x, y) in enumerate(loader):
            if step == self.max_steps:
                break
            with torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
                loss = model.training_step((x, y), step)
            loss.backward()
            opt.step()
            opt.zero_grad()
