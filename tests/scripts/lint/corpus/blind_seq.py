"""Written blind (second batch, before running lint on it): a language-model loop with packed batches,
gradient clipping, token counting and an eval every N steps."""

import math

import torch
from torch.utils.data import DataLoader

DEVICE = "cuda"


def get_batch(split, data, block, bs):
    ix = torch.randint(len(data) - block, (bs,))
    x = torch.stack([data[i:i + block] for i in ix])  # expect: none
    y = torch.stack([data[i + 1:i + 1 + block] for i in ix])
    return x.pin_memory().to(DEVICE, non_blocking=True), y.pin_memory().to(DEVICE, non_blocking=True)  # expect: none


@torch.no_grad()
def estimate_loss(model, data, iters):
    losses = torch.zeros(iters)
    for k in range(iters):
        X, Y = get_batch("val", data, 64, 8)
        _, loss = model(X, Y)
        losses[k] = loss.item()  # expect: none
    return losses.mean()


def train(model, optimizer, data, max_iters, eval_interval, grad_clip):
    best_val_loss = 1e9
    tokens = 0
    for it in range(max_iters):
        if it % eval_interval == 0:
            val = estimate_loss(model, data, 20)
            if val < best_val_loss:  # expect: none
                best_val_loss = val
        lr = 6e-4 * 0.5 * (1.0 + math.cos(math.pi * it / max_iters))
        for group in optimizer.param_groups:
            group["lr"] = lr  # expect: none
        X, Y = get_batch("train", data, 64, 8)
        logits, loss = model(X, Y)
        loss.backward()
        if grad_clip != 0.0:  # expect: none
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        tokens += X.numel()
        lossf = loss.item()  # expect: item-in-loop
        if math.isnan(lossf):  # expect: none
            raise RuntimeError(f"nan loss at {it}")
        ppl = math.exp(lossf)  # expect: none
        if it % 10 == 0:
            print(f"iter {it}: loss {lossf:.4f}, ppl {ppl:.2f}, tokens {tokens}")  # expect: none
        preds = logits.argmax(-1)
        if (preds == Y).all():  # expect: tensor-condition
            print("memorised the batch")
    return best_val_loss


def make_loader(ds):
    return DataLoader(ds, batch_size=16, collate_fn=lambda b: torch.stack(b))  # expect: dataloader-no-workers, dataloader-no-pin-memory
