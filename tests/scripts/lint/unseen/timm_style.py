"""Held-out lint set: train_one_epoch / validate in the style of timm's train.py (simplified)."""

import argparse
import time
from collections import OrderedDict

import torch
import torch.nn as nn
import torchvision

parser = argparse.ArgumentParser()
parser.add_argument("--pin-mem", action="store_true", default=False)
parser.add_argument("--workers", type=int, default=4)
parser.add_argument("--log-interval", type=int, default=50)
parser.add_argument("--distributed", action="store_true")


class AverageMeter:
    def __init__(self):
        self.val = self.avg = self.sum = self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def reduce_tensor(tensor, n):
    rt = tensor.clone()
    torch.distributed.all_reduce(rt, op=torch.distributed.ReduceOp.SUM)
    return rt / n


def train_one_epoch(epoch, model, loader, optimizer, loss_fn, args, lr_scheduler=None):
    batch_time_m, losses_m = AverageMeter(), AverageMeter()
    model.train()
    end = time.time()
    last_idx = len(loader) - 1
    num_updates = epoch * len(loader)
    for batch_idx, (input, target) in enumerate(loader):
        last_batch = batch_idx == last_idx
        input, target = input.cuda(), target.cuda()  # expect: blocking-to
        with torch.autocast("cuda", dtype=torch.bfloat16):
            output = model(input)
            loss = loss_fn(output, target)
        if not args.distributed:
            losses_m.update(loss.item(), input.size(0))  # expect: item-in-loop
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        num_updates += 1
        if not torch.isfinite(loss):  # expect: tensor-condition
            raise ValueError("non-finite loss")
        torch.cuda.synchronize()  # expect: synchronize-in-loop
        if last_batch or batch_idx % args.log_interval == 0:
            lrl = [param_group["lr"] for param_group in optimizer.param_groups]
            lr = sum(lrl) / len(lrl)
            if args.distributed:
                reduced_loss = reduce_tensor(loss.data, 2)
                losses_m.update(reduced_loss.item(), input.size(0))  # expect: none
            print(f"Train: {epoch} [{batch_idx}/{last_idx}] Loss: {losses_m.val:#.3g} LR: {lr:.3e}")  # expect: none
        if lr_scheduler is not None:
            lr_scheduler.step_update(num_updates=num_updates, metric=losses_m.avg)
        batch_time_m.update(time.time() - end)
        end = time.time()
    return OrderedDict([("loss", losses_m.avg)])


def validate(model, loader, loss_fn):
    losses_m, top1_m = AverageMeter(), AverageMeter()
    model.eval()
    with torch.no_grad():
        for input, target in loader:
            input, target = input.cuda(), target.cuda()  # expect: none
            output = model(input)
            loss = loss_fn(output, target)
            acc1 = (output.argmax(1) == target).float().mean() * 100
            losses_m.update(loss.item(), input.size(0))  # expect: none
            top1_m.update(acc1.item(), output.size(0))  # expect: none
    return OrderedDict([("loss", losses_m.avg), ("top1", top1_m.avg)])


def main():
    args = parser.parse_args()
    model = torchvision.models.resnet50().cuda()  # expect: cudnn-benchmark-off
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    train_set = torchvision.datasets.ImageFolder("train", transform=torchvision.transforms.ToTensor())
    eval_set = torchvision.datasets.ImageFolder("val", transform=torchvision.transforms.ToTensor())
    loader_train = torch.utils.data.DataLoader(train_set, batch_size=128, shuffle=True, num_workers=args.workers, pin_memory=args.pin_mem, drop_last=True)  # expect: none
    loader_eval = torch.utils.data.DataLoader(eval_set, batch_size=256, num_workers=args.workers, pin_memory=args.pin_mem)  # expect: none
    loss_fn = nn.CrossEntropyLoss().cuda()
    for epoch in range(90):
        train_metrics = train_one_epoch(epoch, model, loader_train, optimizer, loss_fn, args)
        eval_metrics = validate(model, loader_eval, loss_fn)
        print(epoch, train_metrics, eval_metrics)  # expect: none


if __name__ == "__main__":
    main()
