"""The lint fixes made after scoring set F (benchmarks/lint_heldout_F.tsv, issue 32; F is a development set since):
a model's class followed through a factory function and through what callers pass, so its methods run as per-step
code and are reported at their own line when their file is linted (the way there in the `why`); branches taken
once (`iteration == 0`, a flag that turns itself off, a parameter off by default); diffusers' convolutional models
and a project model built through a linted helper (IH015). Each idiom is written here from scratch, with a healthy
twin that must stay quiet."""

from __future__ import annotations

import textwrap
from pathlib import Path

from idlehound.lint import lint_paths

from .lint_snippets import found as _found
from .lint_snippets import project as _project

MODEL = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x, lengths):
        sizes = lengths.cpu().numpy()
        return self.fc(x)

    def parse_batch(self, batch):
        x, lengths = batch
        longest = torch.max(lengths).item()
        return x.cuda(), lengths.cuda()

    def stats(self):
        return self.fc.weight.norm().item()
"""

# the model comes from a factory function: `load_model()` returns `Net().cuda()`
TRAIN = """\
import torch
from model import Net


def load_model():
    model = Net().cuda()
    return model


def train(loader):
    model = load_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, batch in enumerate(loader):
        x, lengths = model.parse_batch(batch)
        loss = model(x, lengths).sum()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            print(model.stats())
    print(model.stats())
"""


def _lint(root: Path, *names: str) -> list[tuple[str, str, int, str]]:
    return sorted((Path(f.file).name, f.rule, f.line, f.via) for f in lint_paths([root / n for n in names]))


def test_a_model_from_a_factory_runs_its_methods_per_step_reported_at_their_own_line(tmp_path):
    root = _project(tmp_path, {"train.py": TRAIN, "model.py": MODEL})
    # both files linted: the finding is where the user edits it, with the way there; nothing at the call
    assert _lint(root, "train.py", "model.py") == [
        ("model.py", "IH001", 16, "per step via train.py:14 `x, lengths = model.parse_batch(batch)`"),
        ("model.py", "IH002", 11, "per step via train.py:15 `loss = model(x, lengths).sum()`"),
    ]
    # `stats()` is called only under `% 100` and after the loop: not per step (the healthy control)


def test_a_model_file_read_only_as_context_is_still_reported_at_the_call(tmp_path):
    root = _project(tmp_path, {"train.py": TRAIN, "model.py": MODEL})
    assert _lint(root, "train.py") == [
        ("train.py", "IH001", 14, "via model.parse_batch: model.py:16 `longest = torch.max(lengths).item()`"),
        ("train.py", "IH002", 15, "via model: model.py:11 `sizes = lengths.cpu().numpy()`"),
    ]


def test_a_model_passed_by_the_caller_and_unpacked_from_a_list(tmp_path):
    passed = """\
    import torch
    from model import Net


    def train(loader, nets, opt):
        net, other = nets
        for x, lengths in loader:
            net(x, lengths).sum().backward()
            opt.step()


    def main(loader):
        net = Net().to("cuda")
        other = Net().to("cuda")
        net = torch.nn.parallel.DistributedDataParallel(net)
        train(loader, [net, other], torch.optim.SGD(net.parameters(), lr=0.1))
    """
    root = _project(tmp_path, {"train.py": passed, "model.py": MODEL})
    assert _lint(root, "train.py", "model.py") == [
        ("model.py", "IH002", 11, "per step via train.py:8 `net(x, lengths).sum().backward()`")
    ]
    # callers that disagree on the class (or pass something unknown): no class, nothing followed
    disagree = passed.replace("other = Net()", "other = object()").replace("[net, other]", "[other, net]")
    (root / "train.py").write_text(
        textwrap.dedent(disagree) + "\n\ndef again(loader, opt):\n    train(loader, [Net(), 1], opt)\n"
    )
    assert _lint(root, "train.py", "model.py") == []


def test_a_step_counter_compared_with_zero_runs_once_an_epoch_does_not(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch

        def train(model, loader, opt, epoch):
            for iteration, (x, y) in enumerate(loader):
                loss = model(x.cuda()).sum()
                loss.backward()
                opt.step()
                if iteration == 0:
                    print(loss.item())
                if epoch == 0:
                    print(loss.item())
        """,
    )
    assert found == [
        ("IH001", 11)
    ]  # line 9 runs on the first step only; `epoch == 0` holds for a whole epoch


def test_a_branch_that_turns_its_own_flag_off_runs_once(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch

        class Trainer:
            def __init__(self):
                self.need_sync = True
                self.always = True

            def fit(self, model, loader, opt):
                for x in loader:
                    model(x.cuda()).sum().backward()
                    opt.step()
                    if self.need_sync:
                        torch.cuda.synchronize()
                        self.need_sync = False
                    if self.always:
                        torch.cuda.synchronize()
        """,
    )
    assert found == [("IH008", 16)]


def test_a_parameter_off_by_default_that_no_call_passes_is_not_taken(tmp_path):
    source = """\
        import torch

        def forward(model, x, report=False):
            out = model(x)
            if report:
                print(out.sum().item())
            return out

        def train(model, loader, opt):
            for x in loader:
                forward(model, x.cuda()).sum().backward()
                opt.step()
        """
    assert _found(tmp_path, source) == []
    turned_on = source.replace("forward(model, x.cuda())", "forward(model, x.cuda(), report=True)")
    assert _found(tmp_path, turned_on) == [("IH001", 6)]


def test_a_diffusers_convolutional_model_trained_on_the_gpu_gives_ih015(tmp_path):
    source = """\
        import torch
        from diffusers import UNet2DModel

        model = UNet2DModel(sample_size=64).to("cuda")
        opt = torch.optim.AdamW(model.parameters())
        for x in loader:
            model(x.cuda(), 0).sample.sum().backward()
            opt.step()
        """
    assert _found(tmp_path, source) == [("IH015", 4)]
    # built to run once (no training loop): not reported, as for timm's create_model
    assert _found(tmp_path, source.split("opt =")[0] + "model(x)\n") == []


def test_a_project_model_built_through_a_linted_helper_gives_ih015_at_the_build(tmp_path):
    utils = """\
    def get_network(name):
        if name == "vgg":
            from models.vgg import vgg11
            net = vgg11()
        return net.cuda()
    """
    vgg = "import torch.nn as nn\n\n\ndef vgg11():\n    return nn.Sequential(nn.Conv2d(3, 8, 3))\n"
    train = """\
    import torch
    from utils import get_network

    net = get_network("vgg")
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for x in loader:
        net(x.cuda()).sum().backward()
        opt.step()
    """
    root = _project(tmp_path, {"train.py": train, "utils.py": utils, "models/vgg.py": vgg})
    assert _lint(root, "train.py", "utils.py") == [
        ("train.py", "IH015", 4, "via get_network: models/vgg.py:5 builds a convolution")
    ]
    (root / "models" / "vgg.py").write_text(vgg.replace("nn.Conv2d(3, 8, 3)", "nn.Linear(3, 8)"))
    assert _lint(root, "train.py", "utils.py") == []


def test_a_tensor_passed_to_a_per_step_helper_is_a_tensor_there(tmp_path):
    source = """\
        import torch
        from torch.utils.tensorboard import SummaryWriter

        class StepLogger(SummaryWriter):
            def log_training(self, loss_value, grad_norm, step):
                self.add_scalar("loss", loss_value, step)
                self.add_scalar("grad.norm", grad_norm, step)

        def count(labels):
            return int(labels[0])

        def train(model, loader, opt):
            logger = StepLogger("runs")
            for step, (x, labels) in enumerate(loader):
                loss = model(x.cuda()).sum()
                loss.backward()
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                logger.log_training(loss.item(), grad_norm, step)
                count(labels.cuda())
                count([1, 2])
        """
    # line 7: the writer's own add_scalar of the tensor passed every step; line 6 gets a Python float; line 10 is
    # reached with a tensor by the first call (the second call's list alone would not read the GPU)
    assert _found(tmp_path, source) == [("IH001", 19), ("IH005", 7), ("IH006", 10)]
    # a class that is not a writer (its add_scalar may keep the value), or a writer given a Python float: quiet
    assert ("IH005", 7) not in _found(tmp_path, source.replace("(SummaryWriter)", ""))
    assert ("IH005", 7) not in _found(
        tmp_path, source.replace("item(), grad_norm,", "item(), grad_norm.item(),")
    )


def test_a_branch_that_only_warns_after_a_tensor_check_is_not_per_step(tmp_path):
    source = """\
        import torch

        def train(model, loader, opt):
            for x in loader:
                y = model(x.cuda())
                if torch.min(y) < -1.0:
                    print("min value is", torch.min(y))
                if torch.max(y) > 1.0:
                    best = y.max().item()
                y.sum().backward()
                opt.step()
        """
    # the checks are the waits (IH007, lines 6 and 8); line 7 runs only when the check fails; line 9 does more
    # than warn, so it stays per step
    assert _found(tmp_path, source) == [("IH001", 9), ("IH007", 6), ("IH007", 8)]


def test_a_project_modules_builders_used_as_a_registry_give_ih015(tmp_path):
    modeling = """\
    import torch.nn as nn


    def seg_small(num_classes):
        return _head(num_classes)


    def _head(num_classes):
        return nn.Sequential(nn.Conv2d(3, num_classes, 1))
    """
    train = """\
    import torch
    import network

    model = network.modeling.__dict__[name](num_classes=21).to("cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        model(x.cuda()).sum().backward()
        opt.step()
    """
    files = {
        "train.py": train,
        "network/__init__.py": "from .modeling import *\n",
        "network/modeling.py": modeling,
    }
    root = _project(tmp_path, files)
    assert _lint(root, "train.py") == [
        ("train.py", "IH015", 4, "via network.modeling.__dict__: network/modeling.py:9 builds a convolution")
    ]
    (root / "network" / "modeling.py").write_text(
        textwrap.dedent(modeling).replace("nn.Conv2d(3, num_classes, 1)", "nn.Linear(3, 2)")
    )
    assert _lint(root, "train.py") == []


def test_a_script_on_another_accelerators_backend_is_not_a_gpu_script(tmp_path):
    source = """\
        import torch
        import torch_xla.core.xla_model as xm
        from diffusers import UNet2DModel

        device = xm.xla_device()
        model = UNet2DModel(sample_size=64).to(device)
        opt = torch.optim.AdamW(model.parameters())
        for x in loader:
            loss = model(x.to(device), 0).sample.sum()
            loss.backward()
            opt.step()
            print(loss.item())
        """
    assert _found(tmp_path, source) == []  # no cuDNN and no CUDA stream on a TPU
    # the same script saying `cuda` somewhere is read as a GPU script, as before
    assert _found(tmp_path, source.replace("xm.xla_device()", '"cuda"')) == [("IH001", 12), ("IH015", 6)]
