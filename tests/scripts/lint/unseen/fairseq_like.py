"""Held-out lint set: a fairseq-like trainer (a Trainer class whose train_step the epoch loop calls) with the
logging habits of such code."""

import logging
import math

import torch
import torch.distributed as dist
import torch.nn.functional as F

logger = logging.getLogger(__name__)
STEP_FMT = "| epoch {:03d} | step {:05d} | loss {:.3f}"


class Trainer:
    def __init__(self, model, criterion, lr=5e-4, device="cuda"):
        self.device = torch.device(device)
        self.model = model.to(self.device)
        self.criterion = criterion
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), foreach=False)  # expect: optimizer-not-fused
        self.num_updates = 0

    def train_step(self, sample):
        self.model.train()
        sample = {k: v.to(self.device) for k, v in sample.items()}  # expect: none
        net_output = self.model(sample["net_input"])
        loss = self.criterion(net_output, sample["target"])
        self.optimizer.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), 0.1)
        if grad_norm > 1e3:  # expect: tensor-condition
            logger.warning("large gradient norm")
        self.optimizer.step()
        self.num_updates += 1
        ntokens = sample["ntokens"]
        return loss, grad_norm, ntokens

    def valid_step(self, sample):
        self.model.eval()
        with torch.no_grad():
            out = self.model(sample["net_input"].to(self.device))
            return F.cross_entropy(out, sample["target"].to(self.device)).item()  # expect: none


def train(args, trainer, epoch_itr):
    log_every = args.log_interval
    for i, samples in enumerate(epoch_itr):
        loss, grad_norm, ntokens = trainer.train_step(samples)
        ppl = torch.exp(loss)
        stats = (loss, ppl)
        print(*stats)  # expect: print-tensor
        logger.info(("loss %s" + " | ppl %g") % stats)  # expect: print-tensor
        if dist.is_initialized():
            dist.barrier()  # expect: collective-in-loop
        if i % log_every == 0:
            logger.info(STEP_FMT.format(args.epoch, i, loss.item()))  # expect: none
            logger.info("gnorm %.3f" % grad_norm)  # expect: none
        wps = ntokens / max(args.elapsed, 1e-6)
        logger.debug("wps %.1f, lr %.2e" % (wps, args.lr))  # expect: none
    return math.exp(0)


def validate(trainer, valid_itr):
    losses = [trainer.valid_step(s) for s in valid_itr]
    return sum(losses) / max(len(losses), 1)
