"""Written blind (second batch, before running lint on it): a timm-like vision loop with EMA, mixup and timing."""

import time

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader


class ModelEma:
    def __init__(self, model, decay=0.999):
        self.module = torch.nn.Module()
        self.decay = decay

    def update(self, model):
        with torch.no_grad():
            for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                ema_v.copy_(ema_v * self.decay + (1.0 - self.decay) * model_v)  # expect: none


def mixup(x, y, alpha=0.2):
    # a CPU tensor (Beta of Python floats): no GPU sync. Labelled true when written blind; corrected on reading.
    lam = float(torch.distributions.Beta(alpha, alpha).sample())  # expect: none
    index = torch.randperm(x.size(0), device=x.device)
    return lam * x + (1 - lam) * x[index], y, y[index], lam


def train_one_epoch(model, loader, optimizer, device, args, model_ema=None, log_every=50):
    model.train()
    end = time.time()
    num_updates = 0
    for batch_idx, (inputs, target) in enumerate(loader):
        data_time = time.time() - end
        inputs = inputs.to(device, non_blocking=True).to(memory_format=torch.channels_last)  # expect: none
        target = target.to(device, non_blocking=True)  # expect: none
        inputs, ya, yb, lam = mixup(inputs, target)
        output = model(inputs)
        loss = lam * F.cross_entropy(output, ya) + (1 - lam) * F.cross_entropy(output, yb)
        optimizer.zero_grad(set_to_none=True)  # expect: none
        loss.backward()
        optimizer.step()
        if model_ema is not None:  # expect: none
            model_ema.update(model)
        num_updates += 1
        if args.sync_timing:  # expect: none
            torch.cuda.synchronize()  # expect: synchronize-in-loop
        batch_time = time.time() - end
        if batch_idx % log_every == 0 or batch_idx == len(loader) - 1:
            print(f"[{batch_idx}] loss {loss.item():.4f} data {data_time:.3f}s batch {batch_time:.3f}s")  # expect: none
        if lam < 0.5 and data_time > batch_time:  # expect: none
            print("input-bound step")  # expect: none
        end = time.time()
    return num_updates


def main(args, dataset):
    device = torch.device(args.device)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,  # expect: none
                        pin_memory=args.pin_mem, drop_last=True)
    model = torch.nn.Linear(3, 10).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True)  # expect: none
    ema = ModelEma(model)
    for epoch in range(args.epochs):
        n = train_one_epoch(model, loader, optimizer, device, args, ema)
        print(f"epoch {epoch}: {n} updates")  # expect: none
