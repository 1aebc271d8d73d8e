"""The lint fixes of the cross-set round on the setting / loader / copy rules (IH008-IH016; issue 32 item 13),
each made only where it fixed the same kind of error in at least three repositories of the labelled sets A-N.
Each idiom is written here from scratch, with a healthy twin beside each silence (the true pattern still flagged)
and a look-alike beside each new finding."""

from __future__ import annotations

from pathlib import Path

from idlehound.lint import lint_paths

from .lint_snippets import project as _project


def _lint(root: Path, *names: str) -> list[tuple[str, str, int]]:
    return sorted((Path(f.file).name, f.rule, f.line) for f in lint_paths([root / n for n in names]))


# ---- IH016: a project helper that all-reduces the step's values it is given and returns them

_COMM = """\
import torch
import torch.distributed as dist


def all_reduce(tensors, average=True):
    for tensor in tensors:
        dist.all_reduce(tensor)
    if average:
        for tensor in tensors:
            tensor.mul_(1.0 / dist.get_world_size())
    return tensors


def average_gradients(model):
    for p in model.parameters():
        dist.all_reduce(p.grad.data)


def count(tensors):
    for tensor in tensors:
        dist.all_reduce(tensor)
    return dist.get_world_size()
"""

_TRAIN = """\
import torch
import comm as du


def train_epoch(model, loader, opt):
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        du.average_gradients(model)
        opt.step()
        top1 = (model(x).argmax(1) == y).float().mean()
        loss, top1 = du.all_reduce([loss, top1])
        n = du.count([top1])
"""


def test_a_helper_that_all_reduces_the_logged_values_is_a_collective(tmp_path):
    # SlowFast's `du.all_reduce([loss, ...])`, pycls's `dist.scaled_all_reduce([...])`: named like no reduce
    # helper, but its body all-reduces the tensors it is given and returns them, every step
    root = _project(tmp_path / "p", {"comm.py": _COMM, "train.py": _TRAIN})
    found = [f for f in _lint(root, "train.py") if f[1] == "IH016"]
    assert found == [("train.py", "IH016", 14)]


def test_gradient_averaging_and_a_helper_returning_something_else_are_quiet(tmp_path):
    # `average_gradients(model)` returns nothing (the step needs it); `count(...)` reduces but returns the world size:
    # neither hands the reduced values back to the loop (line 11 and 15 stay quiet in the test above too)
    quiet = _TRAIN.replace("        loss, top1 = du.all_reduce([loss, top1])\n", "")
    root = _project(tmp_path / "p", {"comm.py": _COMM, "train.py": quiet})
    assert [f for f in _lint(root, "train.py") if f[1] == "IH016"] == []


_GATHER = """\
import torch
from accelerate import Accelerator

accelerator = Accelerator()


def gather_mean(x):
    x = x.to(accelerator.device)
    gathered = accelerator.gather(x)
    return gathered.mean()


def train(model, loader, opt):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
        avg = gather_mean(loss)
        print(avg.item())
"""


def test_a_same_file_gather_helper_is_reported_at_the_call_and_inside(tmp_path):
    # DALLE2's `pad_gather_reduce(trainer, loss)`: the loop's call waits for every process (19), and so does
    # the gather inside it (9)
    root = _project(tmp_path / "p", {"train.py": _GATHER})
    found = [f for f in _lint(root, "train.py") if f[1] == "IH016"]
    assert found == [("train.py", "IH016", 9), ("train.py", "IH016", 19)]


_VQ = """\
import torch
from torch import nn
import comm as du


class Quantize(nn.Module):
    def forward(self, x):
        onehot = (x > 0).float()
        sums = onehot.sum(0)
        du.all_reduce([sums])
        return x * onehot


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = Quantize()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.q(self.lin(x))


def train(loader):
    model = Net().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = (model(x.cuda()) - y.cuda()).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_a_reduction_inside_the_model_is_part_of_the_computation(tmp_path):
    # vq-vae-2's codebook statistics all-reduced in `Quantize.forward`: needed every step (as gradients are), not
    # the loop reducing its values to log them; neither the model's call nor the helper's is reported
    root = _project(tmp_path / "p", {"comm.py": _COMM, "train.py": _VQ})
    assert [f for f in _lint(root, "train.py") if f[1] == "IH016"] == []


# ---- IH010 / IH011: a loader module of a program that trains on the GPU

_LOADER = """\
import torch
from torch.utils import data


class Faces(data.Dataset):
    def __init__(self, root):
        self.root = root

    def __getitem__(self, i):
        return torch.zeros(3, 8, 8), torch.zeros(1)

    def __len__(self):
        return 10


def get_loader(root, batch_size=16):
    dataset = Faces(root)
    return data.DataLoader(dataset=dataset, batch_size=batch_size, shuffle=True)
"""

_SOLVER = """\
import torch


class Solver:
    def __init__(self, loader):
        self.loader = loader
        self.net = torch.nn.Linear(8, 1).cuda()
        self.opt = torch.optim.Adam(self.net.parameters())

    def train(self):
        for x, y in self.loader:
            loss = (self.net(x.cuda()) - y.cuda()).pow(2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
"""

_MAIN = """\
from data_loader import get_loader
from solver import Solver

if __name__ == "__main__":
    Solver(get_loader("faces")).train()
"""


def test_a_loader_module_of_a_gpu_program_is_checked(tmp_path):
    # stargan / Image_Segmentation / pix2pixHD: `get_loader` in a data module with no device code; main.py hands
    # its loader to the solver, which trains on the GPU: the loader's settings are the program's
    files = {"data_loader.py": _LOADER, "solver.py": _SOLVER, "main.py": _MAIN}
    root = _project(tmp_path / "p", files)
    found = [f for f in _lint(root, *files) if f[1] in ("IH010", "IH011")]
    assert found == [("data_loader.py", "IH010", 18), ("data_loader.py", "IH011", 18)]


def test_a_loader_module_of_a_cpu_program_is_quiet(tmp_path):
    # the same program without a GPU anywhere, and one whose script runs on the CPU by default: nothing to feed
    cpu = _SOLVER.replace(".cuda()", "")
    files = {"data_loader.py": _LOADER, "solver.py": cpu, "main.py": _MAIN}
    root = _project(tmp_path / "p", files)
    assert [f for f in _lint(root, *files) if f[1] in ("IH010", "IH011")] == []
    optional = _MAIN.replace(
        'if __name__ == "__main__":',
        'import argparse\n\nif __name__ == "__main__":\n    argparse.ArgumentParser().add_argument("--device", default="cpu")',
    )
    files = {"data_loader.py": _LOADER, "solver.py": _SOLVER, "main.py": optional}
    root = _project(tmp_path / "q", files)
    assert [f for f in _lint(root, *files) if f[1] in ("IH010", "IH011")] == []


def test_a_set_loader_in_a_gpu_program_stays_quiet(tmp_path):
    # the healthy twin: workers and pinned memory set
    good = _LOADER.replace("shuffle=True)", "shuffle=True, num_workers=4, pin_memory=True)")
    files = {"data_loader.py": good, "solver.py": _SOLVER, "main.py": _MAIN}
    root = _project(tmp_path / "p", files)
    assert [f for f in _lint(root, *files) if f[1] in ("IH010", "IH011")] == []


_BARLOW = """\
import torch
import torch.distributed as dist
from torch import nn


class Twins(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)

    def forward(self, a, b):
        c = self.net(a).T @ self.net(b)
        dist.all_reduce(c)
        return c.pow(2).sum()


def train(loader):
    model = Twins().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for a, b in loader:
        loss = model.forward(a.cuda(), b.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_a_model_forward_called_by_name_from_the_loop_is_quiet(tmp_path):
    # Barlow Twins' `loss = model.forward(y1, y2)`: the forward all-reduces the cross-correlation matrix the loss
    # needs and returns the loss; the loop calls it by name, but it is the model's computation
    root = _project(tmp_path / "p", {"train.py": _BARLOW})
    assert [f for f in _lint(root, "train.py") if f[1] == "IH016"] == []
    # the healthy twin: the same reduction in a helper the loop hands its loss to is reported
    helper = (
        _BARLOW.replace(
            "        loss.backward()\n", "        loss.backward()\n        shown = mean_all(loss.detach())\n"
        )
        + "\n\ndef mean_all(t):\n    dist.all_reduce(t)\n    return t / dist.get_world_size()\n"
    )
    root = _project(tmp_path / "q", {"train.py": helper})
    assert [f for f in _lint(root, "train.py") if f[1] == "IH016"] == [("train.py", "IH016", 24)]


def test_a_helper_that_reduces_only_a_normaliser_is_quiet(tmp_path):
    # SwAV's `q = distributed_sinkhorn(out)`: the helper all-reduces a sum and divides its own matrix by it: the
    # reduction is part of the loss computation, and what it returns is not the reduced value
    sinkhorn = (
        "\n\ndef sinkhorn(out):\n    q = torch.exp(out)\n    total = torch.sum(q)\n    dist.all_reduce(total)\n"
        "    q /= total\n    return q.t()\n"
    )
    code = (
        _BARLOW.replace("model.forward(a.cuda(), b.cuda())", "sinkhorn(model.net(a.cuda())).sum()") + sinkhorn
    )
    root = _project(tmp_path / "p", {"train.py": code})
    assert [f for f in _lint(root, "train.py") if f[1] == "IH016"] == []


def test_a_loader_utility_no_other_file_calls_is_quiet(tmp_path):
    # robustness's `TransformedLoader(...)`: a loader-building function of the loader module that no other file of
    # the program names is a utility for users, not the program's training path; `get_loader` beside it, called
    # from main.py, is still reported (the healthy twin)
    utility = _LOADER + (
        "\n\ndef transformed_loader(loader, func, workers=4):\n"
        "    xs = torch.cat([func(x) for x, _ in loader])\n"
        "    return data.DataLoader(data.TensorDataset(xs), num_workers=workers, batch_size=8)\n"
    )
    files = {"data_loader.py": utility, "solver.py": _SOLVER, "main.py": _MAIN}
    root = _project(tmp_path / "p", files)
    found = [f for f in _lint(root, *files) if f[1] in ("IH010", "IH011")]
    assert found == [("data_loader.py", "IH010", 18), ("data_loader.py", "IH011", 18)]
