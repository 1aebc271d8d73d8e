"""Hogwild-style: training happens only in child processes; the main process makes no step."""

import torch
import torch.multiprocessing as mp


def train(model):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(5):
        loss = model(torch.randn(4, 8)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    model = torch.nn.Linear(8, 1)
    model.share_memory()
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=train, args=(model,)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    print("DONE", [p.exitcode for p in procs])
