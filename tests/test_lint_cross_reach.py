"""Host-sync misses (IH001-IH007) fixed in the reach round of issue 32 (developed on sets A-V at once): a sync
inside a model's forward, reached through a module instance lint now resolves by type: `model.Net()` (a class of
a module imported whole), `model.resnet50()` (a factory of that module returning one class), wrapped afterwards
(`DataParallel(net).cuda()`, `amp.initialize(net, opt)`), or an element of a ModuleList iterated in a forward
(`for flow in self.flows: x = flow(x)`). The evaluation branch of a forward (`else:` of `if self.training:`) stays
silent. Each idiom is written here from scratch, with a healthy twin beside each silence."""

from __future__ import annotations

from pathlib import Path

from idlehound.lint import lint_paths

from .lint_snippets import project as _project

_MODEL = """\
import torch
from torch import nn


class Head(nn.Module):
    def forward(self, scores):
        keep = torch.sum(scores > 0.5)
        if keep > 0:
            return scores.mean()
        return scores.sum()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.head = Head()

    def forward(self, x):
        scores = self.fc(x)
        if self.training:
            return self.head(scores)
        else:
            if torch.max(scores) == 0:
                return None
            return scores


def net50():
    model = Net()
    return model
"""

_TRAIN = """\
import torch
from pkg import model

BUILD
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for x in torch.randn(100, 4, 8).cuda():
    loss = net(x)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(float(loss))
"""


def _lint(root: Path, *names: str) -> list[tuple[str, str, int]]:
    return sorted((Path(f.file).name, f.rule, f.line) for f in lint_paths([root / n for n in names]))


def _train(tmp_path: Path, build: str, name: str = "p") -> Path:
    files = {"pkg/__init__.py": "", "pkg/model.py": _MODEL, "train.py": _TRAIN.replace("BUILD", build)}
    return _project(tmp_path / name, files)


def test_an_instance_of_a_class_of_a_module_imported_whole_runs_its_forward(tmp_path):
    # `net = model.Net().cuda()`: calling it runs Net.forward, whose head's `if keep > 0:` reads the GPU every step
    root = _train(tmp_path, "net = model.Net().cuda()")
    found = _lint(root, "train.py", "pkg/model.py")
    assert ("model.py", "IH007", 8) in found
    # the evaluation branch of the same forward (`else:` of `if self.training:`) is not run by training
    assert ("model.py", "IH007", 23) not in found
    # the call's value keeps the kind its name gives: `float(loss)` of the model's output is still a sync
    assert ("train.py", "IH006", 11) in found


def test_a_factory_of_that_module_and_a_wrap_keep_the_class(tmp_path):
    root = _train(tmp_path, "net = model.net50()\nnet = torch.nn.DataParallel(net).cuda()")
    assert ("model.py", "IH007", 8) in _lint(root, "train.py", "pkg/model.py")


def test_a_name_also_bound_to_something_unknown_stays_quiet(tmp_path):
    build = "if torch.cuda.device_count() > 1:\n    net = model.Net()\nelse:\n    net = load_net()"
    root = _train(tmp_path, build, "unknown")
    assert ("model.py", "IH007", 8) not in _lint(root, "train.py", "pkg/model.py")
    # healthy twin: both branches build the same class
    root = _train(tmp_path, build.replace("load_net()", "model.Net().cuda()"), "both")
    assert ("model.py", "IH007", 8) in _lint(root, "train.py", "pkg/model.py")


_FLOWS = """\
import torch
from torch import nn


class Step(nn.Module):
    def forward(self, x, lens):
        for k in range(x.size(0)):
            x[k] = x[k].roll(lens[k].item(), dims=0)
        return x


class Flow(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.flows = nn.ModuleList()
        for _ in range(n):
            self.flows.append(Step())

    def forward(self, x, lens):
        for i, flow in enumerate(self.flows):
            x = flow(x, lens)
        return x

    def infer(self, x, lens):
        for flow in reversed(self.flows):
            x = flow(x, lens)
        return x


model = Flow(2).cuda()
opt = torch.optim.Adam(model.parameters())
for x, lens in torch.randn(10, 4, 8, 8).cuda():
    out = model(x, lens)
    out.mean().backward()
    opt.step()
"""


def test_the_elements_of_a_module_list_iterated_in_a_forward_run_their_forward(tmp_path):
    root = _project(tmp_path / "flows", {"flow.py": _FLOWS})
    # `for i, flow in enumerate(self.flows): x = flow(x, lens)`: Step.forward's `.item()` runs every step
    assert ("flow.py", "IH001", 8) in _lint(root, "flow.py")


def test_a_module_list_iterated_only_outside_training_stays_quiet(tmp_path):
    # the same ModuleList iterated only by `infer()`, which no training step calls: quiet
    source = _FLOWS.replace("for i, flow in enumerate(self.flows):", "for i in range(2):").replace(
        "x = flow(x, lens)\n        return x\n\n    def infer", "x = x * 2\n        return x\n\n    def infer"
    )
    root = _project(tmp_path / "infer", {"flow.py": source})
    assert ("flow.py", "IH001", 8) not in _lint(root, "flow.py")
