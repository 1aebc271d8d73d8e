"""Loader options merged into the base dicts only under `if use_accel:` (the MNIST / Siamese / Forward-Forward
shape): an option put in the base dict (prefetch_factor) would hold without workers on the CPU branch."""

import argparse

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-accel", action="store_true")
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    use_accel = not args.no_accel and torch.accelerator.is_available()
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")

    train_kwargs = {"batch_size": 32}
    test_kwargs = {"batch_size": 256}
    if use_accel:
        accel_kwargs = {"num_workers": 1, "persistent_workers": True, "pin_memory": True, "shuffle": True}
        train_kwargs.update(accel_kwargs)
        test_kwargs.update(accel_kwargs)

    data = torch.utils.data.TensorDataset(torch.randn(2048, 16), torch.randint(0, 3, (2048,)))
    train_loader = torch.utils.data.DataLoader(data, **train_kwargs)
    test_loader = torch.utils.data.DataLoader(data, **test_kwargs)

    model = torch.nn.Linear(16, 3).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(train_loader):
        x, y = x.to(device), y.to(device)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step + 1 == args.steps:
            break
    print(len(test_loader))


if __name__ == "__main__":
    main()
