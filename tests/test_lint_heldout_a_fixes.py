"""The lint fixes made after scoring held-out set A (benchmarks/lint_heldout_A.tsv, issue 32): a loop that steps
through a loss scaler called with the optimizer, helpers that all-reduce a logged value, and loaders of a dataset
that returns tensors already on the device. Each idiom is written here from scratch, with the look-alike that must
still be reported (or stay quiet)."""

from .lint_snippets import found as _found


def test_a_loop_stepping_through_a_loss_scaler_is_a_training_loop(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch

        def train_one_epoch(model, loader, optimizer, device, loss_scaler):
            for x, y in loader:
                x = x.to(device, non_blocking=True)
                loss = torch.nn.functional.mse_loss(model(x), y.to(device, non_blocking=True))
                value = loss.item()
                loss_scaler(loss, optimizer, parameters=model.parameters())
                torch.cuda.synchronize()
        """,
    )
    assert found == [("IH001", 7), ("IH008", 9)]


def test_a_scaler_call_without_an_optimizer_is_no_step(tmp_path):
    # an evaluation loop calling something named like a scaler, with no optimizer: not a training loop
    found = _found(
        tmp_path,
        """\
        import torch

        def evaluate(model, loader, device, feature_scaler):
            for x, y in loader:
                x = feature_scaler(x.to(device))
                loss = torch.nn.functional.mse_loss(model(x), y.to(device))
                print(loss.item())
        """,
    )
    assert found == []


def test_a_helper_that_all_reduces_a_logged_value_every_step_is_a_collective(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch
        import torch.distributed as dist
        import helpers

        model = torch.nn.Linear(4, 1).cuda()
        opt = torch.optim.SGD(model.parameters())
        for step in range(100):
            loss = model(torch.randn(2, 4, device="cuda")).sum()
            loss.backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
            opt.step()
            logged = helpers.all_reduce_mean(loss.detach())
            losses = helpers.reduce_dict({"loss": loss.detach()})
            if step % 50 == 0:
                shown = helpers.reduce_tensor(loss.detach())
        """,
    )
    # the gradient all_reduce is the training itself; the periodic reduce_tensor is not every step
    assert found == [("IH016", 13), ("IH016", 14)]


def test_loaders_of_a_dataset_returning_device_tensors_get_no_worker_or_pin_advice(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch
        from torch.utils.data import DataLoader, Dataset

        device = "cuda"

        class OnDevice(Dataset):
            def __init__(self, data):
                self.data = data
            def __getitem__(self, i):
                return self.data[i : i + 8].long().to(device)
            def __len__(self):
                return len(self.data) - 8

        class AsLong(Dataset):
            def __init__(self, data):
                self.data = data
            def __getitem__(self, i):
                return self.data[i : i + 8].to(torch.long)
            def __len__(self):
                return len(self.data) - 8

        data = torch.randint(0, 255, (10000,))
        train_set = OnDevice(data)
        fast = DataLoader(train_set, batch_size=4)
        slow = DataLoader(AsLong(data), batch_size=4)
        model = torch.nn.Embedding(256, 8).to(device)
        """,
    )
    # `.to(torch.long)` is a dtype change: that dataset's loader is still reported
    assert found == [("IH010", 25), ("IH011", 25)]
