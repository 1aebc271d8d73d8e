"""lint's project view: linting one script also reads the project modules it imports (never runs them) and
reports what they do at the script's own lines, naming where it came from. Small multi-file projects written
here, each with a healthy twin that must stay quiet."""

from __future__ import annotations

from pathlib import Path

from idlehound.lint import lint_paths

from .lint_snippets import found as lint_snippet
from .lint_snippets import project as _project

MAIN = """\
import torch
from engine import train_one_epoch
from models.net import Net

device = torch.device("cuda")
model = Net().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = torch.utils.data.DataLoader(list(range(8)), num_workers=2, pin_memory=True)
for epoch in range(3):
    train_one_epoch(model, opt, loader, device)
"""

ENGINE = """\
def train_one_epoch(model, opt, loader, device):
    for x in loader:
        x = x.to(device, non_blocking=True)
        loss = model(x).sum()
        loss.backward()
        opt.step()
        log_step(loss)


def log_step(loss):
    print(loss.item())
"""

HEALTHY_ENGINE = ENGINE.replace("print(loss.item())", "return loss.detach()")

NET = """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = make_body()

    def forward(self, x):
        return self.body(x)


def make_body():
    return nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())
"""

LINEAR_NET = NET.replace("nn.Conv2d(3, 8, 3)", "nn.Linear(3, 8)")


def _found(path: Path, **kw: bool) -> set[tuple[str, int, str]]:
    return {(f.rule, f.line, f.to_json()["why"]) for f in lint_paths([path], **kw)}


def test_a_helper_in_another_module_is_reported_at_the_call_in_the_script(tmp_path):
    root = _project(
        tmp_path, {"main.py": MAIN, "engine.py": ENGINE, "models/__init__.py": "", "models/net.py": NET}
    )
    found = lint_paths([root / "main.py"])
    assert all(f.file.endswith("main.py") for f in found)  # engine.py is read, never reported on itself
    item = [f for f in found if f.rule == "IH001"]
    assert [(f.line, f.via) for f in item] == [(10, "via train_one_epoch: engine.py:11 `print(loss.item())`")]
    assert "train_one_epoch: engine.py:11" in item[0].to_json()["why"]


def test_a_model_class_of_another_module_with_convolutions_gives_ih015_where_it_is_built(tmp_path):
    root = _project(tmp_path, {"main.py": MAIN, "engine.py": HEALTHY_ENGINE, "models/net.py": NET})
    ih015 = [f for f in lint_paths([root / "main.py"]) if f.rule == "IH015"]
    # Net -> make_body() -> nn.Conv2d: followed through the helper the class calls
    assert [(f.line, f.via) for f in ih015] == [(6, "via Net: models/net.py:14 builds a convolution")]


def test_the_healthy_twin_stays_quiet(tmp_path):
    """No sync in the helper, a Linear model, cudnn.benchmark set: nothing to report."""
    root = _project(tmp_path, {"main.py": MAIN, "engine.py": HEALTHY_ENGINE, "models/net.py": LINEAR_NET})
    assert lint_paths([root / "main.py"]) == []
    conv = _project(tmp_path / "b", {"main.py": MAIN, "engine.py": HEALTHY_ENGINE, "models/net.py": NET})
    (conv / "engine.py").write_text("import torch\ntorch.backends.cudnn.benchmark = True\n" + HEALTHY_ENGINE)
    assert lint_paths([conv / "main.py"]) == []  # set in a module the script imports: set for the program


def test_without_the_project_view_the_script_alone_knows_only_itself(tmp_path):
    root = _project(tmp_path, {"main.py": MAIN, "engine.py": ENGINE, "models/net.py": NET})
    assert lint_paths([root / "main.py"], project=False) == []


def test_a_pinned_loader_in_another_module_makes_the_scripts_copies_blocking(tmp_path):
    data = "import torch\n\ndef make_loader(ds):\n    return torch.utils.data.DataLoader(ds, num_workers=4, pin_memory=True)\n"
    script = (
        "import torch\nfrom data import make_loader\n\ndevice = 'cuda'\nmodel = torch.nn.Linear(2, 1).to(device)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor x in make_loader([]):\n"
        "    x = x.to(device)\n    model(x).sum().backward()\n    opt.step()\n"
    )
    root = _project(tmp_path, {"train.py": script, "data.py": data})
    assert [(f.rule, f.line) for f in lint_paths([root / "train.py"])] == [("IH012", 8)]
    (root / "data.py").write_text(data.replace("pin_memory=True", "pin_memory=False"))
    assert lint_paths([root / "train.py"]) == []  # pageable batches: non_blocking would not overlap


def test_a_helper_method_of_an_imported_class_two_calls_down(tmp_path):
    """`self.trainer = Trainer(...)` in __init__, `self.trainer.optimize(opt)` every step, and the .item() two
    methods further down in the imported class (guided-diffusion's MixedPrecisionTrainer pattern)."""
    trainer = (
        "class Trainer:\n    def __init__(self, params):\n        self.params = params\n\n"
        "    def optimize(self, opt):\n        self._norms()\n        opt.step()\n\n"
        "    def _norms(self):\n        for p in self.params:\n            print(p.grad.norm().item())\n"
    )
    loop = (
        "import torch\nfrom trainer import Trainer\n\n\nclass Loop:\n    def __init__(self, model):\n"
        "        self.model = model.cuda()\n        self.trainer = Trainer(list(model.parameters()))\n"
        "        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)\n\n"
        "    def run(self, batches):\n        for x in batches:\n            self.step(x)\n\n"
        "    def step(self, x):\n        self.model(x).sum().backward()\n        self.trainer.optimize(self.opt)\n"
    )
    root = _project(tmp_path, {"loop.py": loop, "trainer.py": trainer})
    found = [(f.rule, f.line, f.via) for f in lint_paths([root / "loop.py"])]
    assert found == [("IH001", 17, "via self.trainer.optimize: trainer.py:11 `print(p.grad.norm().item())`")]


def test_an_option_off_by_default_in_an_imported_module_is_not_taken(tmp_path):
    """yolov5's ComputeLoss: `if self.autobalance:` (a constructor flag defaulting to False) guards an .item()."""
    loss = (
        "class Loss:\n    def __init__(self, autobalance=False):\n        self.autobalance = autobalance\n\n"
        "    def __call__(self, out):\n        value = out.sum()\n        if self.autobalance:\n"
        "            print(value.item())\n        return value\n"
    )
    script = (
        "import torch\nfrom loss import Loss\n\nmodel = torch.nn.Linear(2, 1).cuda()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\ncriterion = Loss()\n"
        "for x in [torch.ones(2)]:\n    criterion(model(x)).backward()\n    opt.step()\n"
    )
    root = _project(tmp_path, {"train.py": script, "loss.py": loss})
    assert lint_paths([root / "train.py"]) == []
    (root / "loss.py").write_text(loss.replace("autobalance=False", "autobalance=True"))
    assert [(f.rule, f.line) for f in lint_paths([root / "train.py"])] == [("IH001", 8)]


def test_the_view_stays_inside_the_project_and_is_bounded(tmp_path):
    """A module beside the project root (above its .git) is not read; a chain of imports is followed 3 hops."""
    (tmp_path / "engine.py").write_text(ENGINE)  # outside the project
    root = _project(tmp_path / "proj", {"main.py": MAIN, "models/net.py": LINEAR_NET})
    assert lint_paths([root / "main.py"]) == []
    chain = {
        f"m{i}.py": f"from m{i + 1} import f{i + 1}\n\ndef f{i}(x):\n    return f{i + 1}(x)\n"
        for i in range(6)
    }
    chain["m6.py"] = "def f6(x):\n    return x.item()\n"
    import ast

    from idlehound.lint._view import context_files

    deep = _project(tmp_path / "chain", chain)
    read = context_files({deep / "m0.py": ast.parse(chain["m0.py"])})
    assert sorted(p.name for p in read) == ["m1.py", "m2.py", "m3.py"]


LOOP_WITH_KWARGS = """\
import torch


def training_loop(data_loader_kwargs={}, device="cuda"):
    model = torch.nn.Linear(2, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in torch.utils.data.DataLoader(list(range(8)), **data_loader_kwargs):
        x = x.to(device)
        model(x).sum().backward()
        opt.step()
"""

LAUNCHER = """\
import dnnlib
from training import training_loop

c = dnnlib.EasyDict()
c.data_loader_kwargs = dnnlib.EasyDict(pin_memory=True, num_workers=3)
training_loop.training_loop(**c)
"""


def test_loader_options_built_by_a_caller_elsewhere_pin_the_loader(tmp_path):
    """EDM / StyleGAN2-ADA: the launcher builds the loader's **kwargs and passes them through **c; the loop
    module (linted alone) copies blocking after a pinned loader."""
    root = _project(tmp_path, {"train.py": LAUNCHER, "training/training_loop.py": LOOP_WITH_KWARGS})
    found = [(f.rule, f.line) for f in lint_paths([root / "training" / "training_loop.py"])]
    assert found == [("IH012", 8)]
    (root / "train.py").write_text(LAUNCHER.replace("pin_memory=True", "pin_memory=False"))
    assert lint_paths([root / "training" / "training_loop.py"]) == []
    (root / "train.py").unlink()  # nobody builds them: unknown, so nothing is said
    assert lint_paths([root / "training" / "training_loop.py"]) == []
    venv = root / ".venv" / "lib" / "site-packages"  # an environment inside the clone is not the project
    venv.mkdir(parents=True)
    (venv / "other.py").write_text(LAUNCHER)
    assert lint_paths([root / "training" / "training_loop.py"]) == []


def test_an_option_a_caller_turns_on_by_name_is_per_step(tmp_path):
    loss = (
        "class Loss:\n    def __init__(self, autobalance=False):\n        self.autobalance = autobalance\n\n"
        "    def __call__(self, out):\n        value = out.sum()\n        if self.autobalance:\n"
        "            print(value.item())\n        return value\n"
    )
    script = (
        "import torch\nfrom loss import Loss\n\nmodel = torch.nn.Linear(2, 1).cuda()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\ncriterion = Loss(autobalance=args.balance)\n"
        "for x in [torch.ones(2)]:\n    criterion(model(x)).backward()\n    opt.step()\n"
    )
    root = _project(tmp_path, {"train.py": script, "loss.py": loss})
    assert [(f.rule, f.line) for f in lint_paths([root / "train.py"])] == [("IH001", 8)]


def test_an_evaluation_script_building_a_project_model_gets_no_ih015(tmp_path):
    """IH015 from a model of another module needs training in the file (or a project function that trains
    it): an evaluation script that loads the model and runs it is left alone."""
    evaluate = (
        "import torch\nfrom models.net import Net\n\nmodel = Net().to('cuda')\nmodel.eval()\n"
        "for x in [torch.ones(1, 3, 8, 8)]:\n    model(x)\n"
    )
    root = _project(tmp_path, {"evaluate.py": evaluate, "models/net.py": NET})
    assert lint_paths([root / "evaluate.py"]) == []
    trainer = "def fit(model, opt, batches):\n    for x in batches:\n        model(x).sum().backward()\n        opt.step()\n"
    script = evaluate + "from trainer import fit\nfit(model, torch.optim.SGD(model.parameters()), [])\n"
    root2 = _project(tmp_path / "b", {"run.py": script, "models/net.py": NET, "trainer.py": trainer})
    assert [(f.rule, f.line) for f in lint_paths([root2 / "run.py"])] == [("IH015", 4)]


def test_a_branch_that_breaks_out_of_the_training_loop_runs_once(tmp_path):
    script = (
        "import torch\n\nmodel = torch.nn.Linear(2, 1).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for step in range(100):\n    loss = model(torch.ones(2, device='cuda')).sum()\n    loss.backward()\n"
        "    opt.step()\n    if step > 90:\n        print(loss.item())\n        break\n"
        "    for k in range(3):\n        if k == 1:\n            print(loss.item())\n            break\n"
    )
    # the first leaves the training loop (once); the second only an inner loop: every step
    assert lint_snippet(tmp_path, script, "train.py") == [("IH001", 14)]


def test_a_helper_returning_a_modulo_test_makes_its_branch_periodic(tmp_path):
    script = (
        "import torch\n\n\ndef divisible_by(numer, denom):\n    return (numer % denom) == 0\n\n\n"
        "model = torch.nn.Linear(2, 1).cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for step in range(100):\n    loss = model(torch.ones(2, device='cuda')).sum()\n    loss.backward()\n"
        "    opt.step()\n    if divisible_by(step, 10):\n        print(loss.item())\n"
        "    if abs(step) > 3:\n        print(loss.item())\n"
    )
    assert lint_snippet(tmp_path, script, "train.py") == [("IH001", 17)]


def test_a_model_from_a_registry_dict_of_a_project_module(tmp_path):
    """DiT: `model = DiT_models[args.model](...)`, the registry a dict of builders in models.py."""
    models = NET + "\n\ndef net_small():\n    return Net()\n\n\nNETS = {'small': net_small}\n"
    script = (
        "import torch\nfrom models import NETS\n\nmodel = NETS['small']().cuda()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in [torch.ones(1, 3, 8, 8)]:\n    model(x).sum().backward()\n    opt.step()\n"
    )
    root = _project(tmp_path, {"train.py": script, "models.py": models})
    assert [(f.rule, f.line, f.via) for f in lint_paths([root / "train.py"])] == [
        ("IH015", 4, "via NETS: models.py:14 builds a convolution")
    ]
    (root / "models.py").write_text(models.replace("nn.Conv2d(3, 8, 3)", "nn.Linear(3, 8)"))
    assert lint_paths([root / "train.py"]) == []


def test_unreadable_context_files_are_skipped_not_fatal(tmp_path):
    """A module the script imports that is not valid Python, or a FIFO named like one, is left out (it is not
    the file the user asked to lint); the script itself is still linted."""
    import os

    files = {"main.py": "import broken\nimport helpers\n" + MAIN, "engine.py": ENGINE, "models/net.py": NET}
    root = _project(tmp_path, {**files, "broken.py": "def f(:\n"})
    os.mkfifo(root / "helpers.py")
    found = [(f.rule, f.line) for f in lint_paths([root / "main.py"])]
    assert found == [
        ("IH015", 8),
        ("IH001", 12),
    ]  # engine.py and models/net.py read; broken.py, the FIFO skipped
    os.mkfifo(root / "pipe_data_loader_kwargs.py")  # the text search opens regular files only
    (root / "training").mkdir()
    (root / "training" / "training_loop.py").write_text(LOOP_WITH_KWARGS)
    assert lint_paths([root / "training" / "training_loop.py"]) == []
