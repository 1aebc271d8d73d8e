"""Held-out lint set, second batch (written after the rules changed, scored as is): a DDP script with a
validation pass and a metric logger, in the style of common torchrun tutorials."""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def setup():
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    return int(os.environ["LOCAL_RANK"])


def main():
    rank = setup()
    train_set = TensorDataset(torch.randn(4096, 128), torch.randint(0, 10, (4096,)))
    val_set = TensorDataset(torch.randn(512, 128), torch.randint(0, 10, (512,)))
    train_loader = DataLoader(train_set, batch_size=64, sampler=DistributedSampler(train_set), pin_memory=True)  # expect: dataloader-no-workers
    val_loader = DataLoader(val_set, batch_size=256)  # expect: none
    model = DDP(torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.GELU(), torch.nn.Linear(256, 10)).to(rank), device_ids=[rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    history = []
    for epoch in range(5):
        train_loader.sampler.set_epoch(epoch)
        for x, y in train_loader:
            x, y = x.to(rank), y.to(rank)  # expect: blocking-to
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            history.append(loss.detach())  # expect: none
            dist.all_reduce(loss.detach())  # expect: none
            if rank == 0:
                print("loss:", loss)  # expect: print-tensor
        model.eval()
        correct = torch.zeros((), device=rank)
        with torch.no_grad():
            for x, y in val_loader:
                x, y = x.to(rank), y.to(rank)  # expect: none
                correct += (model(x).argmax(1) == y).sum()
        dist.barrier()  # expect: none
        if rank == 0:
            print(f"epoch {epoch}: acc {correct.item() / len(val_set):.3f}, last loss {torch.stack(history[-10:]).mean().item():.4f}")  # expect: none
        model.train()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
