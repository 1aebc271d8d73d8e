"""Harder shapes: a trainer object, containers and loggers, short-circuit conditions, helpers returning tensors."""

import logging

import torch
import torch.nn.functional as F

log = logging.getLogger(__name__)
device = torch.device("cuda")


def compute_loss(model, x, y):
    return F.cross_entropy(model(x), y)


def timed(fn):
    torch.cuda.synchronize()  # expect: synchronize-in-loop
    return fn()


class Trainer:
    def __init__(self, model, opt):
        self.model, self.opt = model, opt

    def train_step(self, x, y):
        loss = compute_loss(self.model, x, y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        acc = (self.model(x).argmax(1) == y).float().mean()
        return loss.detach(), acc

    def report(self, metrics):
        print("metrics:", metrics)  # expect: none


def fit(model, opt, loader, pbar):
    trainer = Trainer(model, opt)
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        loss, acc = trainer.train_step(x, y)
        if acc > 0.99:  # expect: tensor-condition
            break
        print({"loss": loss, "step": step})  # expect: print-tensor
        log.info(f"step {step} loss {loss}")  # expect: print-tensor
        log.info("step %d", step)  # expect: none
        pbar.set_postfix(loss=loss.item())  # expect: item-in-loop
        if step % 50 == 0 and loss.item() > 5:  # expect: none
            trainer.report({"loss": loss.item()})  # expect: none
        timed(lambda: None)
        if x.shape[0] != 32 or len(y) < 32:  # expect: none
            continue
        print(f"shape {x.shape} on {x.device}")  # expect: none
        if torch.isnan(loss).any().item():  # expect: item-in-loop
            break
        model.train()


def finetune(model, opt, batches):
    for x, y in batches:
        loss = compute_loss(model, x.to(device), y.to(device))
        if loss > 5.0:  # expect: tensor-condition
            continue
        loss.backward()
        opt.step()
        opt.zero_grad()
