"""The lint fixes made after scoring set H (benchmarks/lint_heldout_H.tsv, issue 32; H is a development set since):
a function shared by the training and the evaluation phase steps only in one phase; a name bound to one of several
classes by an option runs the method of each; `.cpu().data.numpy()` waits once; cudnn.benchmark set by a script
covers the modules it imports at any depth, and IH015 is not repeated in a module whose importer reports it; tensors
rebuilt on the host (`torch.cat` of a batch, comparisons, `expand_as`) are pageable for IH012; a step-counter buffer
a trainer keeps on the host is not a wait; a function a factory returns runs where its result is called. Each idiom
is written here from scratch, with a healthy twin beside each silence (the true pattern still reported)."""

from __future__ import annotations

from pathlib import Path

from idlehound.lint import lint_paths

from .lint_snippets import found as _found
from .lint_snippets import project as _project


def _lint(root: Path, *names: str) -> list[tuple[str, str, int]]:
    return sorted((Path(f.file).name, f.rule, f.line) for f in lint_paths([root / n for n in names]))


_PHASES = """\
import enum
import torch


class Phase(enum.Enum):
    TRAIN = 0
    VAL = 1


def make_loop(model, opt, data):
    def run(phase, epoch):
        out = model(data.cuda())
        loss = out.sum()
        if phase == Phase.TRAIN:
            opt.zero_grad()
            loss.backward()
            opt.step()
        acc = (out > 0).float().mean().item()
        if phase == Phase.TRAIN:
            print("train", loss.item())
        elif phase == Phase.VAL:
            print("val", loss.item())
        if phase == Phase.VAL:
            best = loss.item()
        return acc

    return run


def main(model, opt, data):
    run = make_loop(model, opt, data)
    for epoch in range(10):
        run(Phase.TRAIN, epoch)
        with torch.no_grad():
            run(Phase.VAL, epoch)


if __name__ == "__main__":
    main(torch.nn.Linear(4, 1).cuda(), None, torch.zeros(2, 4))
"""


def test_the_evaluation_phase_of_a_shared_loop_function_is_not_per_step(tmp_path):
    # the step runs under `phase == Phase.TRAIN`: its `elif` and an `if` on another phase run without a step
    assert _found(tmp_path, _PHASES) == [("IH001", 18), ("IH001", 20)]


def test_a_step_count_test_is_not_a_phase(tmp_path):
    # healthy twin: with gradient accumulation the `else` of `(i + 1) % accum == 0` is every other micro-batch,
    # still per step (the `.item()` there waits each time)
    found = _found(
        tmp_path,
        """\
        import torch

        def train(model, loader, opt, accum):
            for i, (x, y) in enumerate(loader):
                loss = model(x.cuda()).sum()
                loss.backward()
                if (i + 1) % accum == 0:
                    opt.step()
                if (i + 1) % accum == 0:
                    pass
                else:
                    print(loss.item())
        """,
    )
    assert found == [("IH001", 12)]


# two policy modules alike but for the class name (TD3 and DDPG of one RL repository)
_POLICY = """\
    import torch

    device = torch.device("cuda")


    class {name}:
        def __init__(self):
            self.actor = torch.nn.Linear(4, 2).to(device)
            self.opt = torch.optim.Adam(self.actor.parameters())

        def select_action(self, state):
            state = torch.FloatTensor(state).to(device)
            return self.actor(state).cpu().data.numpy()

        def train(self, batch):
            loss = self.actor(batch.to(device)).sum()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
    """

_POLICIES = {
    **{f"{name.lower()}.py": _POLICY.format(name=name) for name in ("TD3", "DDPG")},
    "main.py": """\
    import argparse

    import ddpg
    import td3

    args = argparse.ArgumentParser().parse_args()
    if args.policy == "TD3":
        policy = td3.TD3()
    else:
        policy = ddpg.DDPG()

    state = [0.0] * 4
    for t in range(1000):
        action = policy.select_action(state)
        policy.train(state)
    """,
}


def test_a_name_bound_to_one_of_several_classes_runs_the_method_of_each(tmp_path):
    root = _project(tmp_path, _POLICIES)
    # `policy` is a TD3 or a DDPG by an option: the loop trains through either, each select_action copies once
    # (`.cpu().data.numpy()`: the wait is at the copy, IH002 only)
    assert _lint(root, "main.py", "td3.py", "ddpg.py") == [("ddpg.py", "IH002", 13), ("td3.py", "IH002", 13)]


def test_one_class_still_resolves_and_an_unknown_one_stays_quiet(tmp_path):
    files = dict(_POLICIES)
    # healthy twin: one class imported by name (as before this fix)
    files["main.py"] = """\
    from td3 import TD3

    policy = TD3()
    state = [0.0] * 4
    for t in range(1000):
        action = policy.select_action(state)
        policy.train(state)
    """
    root = _project(tmp_path / "one", files)
    assert _lint(root, "main.py", "td3.py", "ddpg.py") == [("td3.py", "IH002", 13)]
    # a name bound to something lint cannot resolve (a loader function of another package) reaches no step
    files["main.py"] = _POLICIES["main.py"].replace("policy = ddpg.DDPG()", "policy = load_policy()")
    root = _project(tmp_path / "unknown", files)
    assert _lint(root, "main.py", "td3.py", "ddpg.py") == []


def test_cpu_then_detach_or_data_then_numpy_waits_once(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch

        def train(model, loader, opt):
            for x, y in loader:
                out = model(x.cuda())
                loss = out.sum()
                loss.backward()
                opt.step()
                a = out.cpu().detach().numpy()
                b = out.detach().numpy()
        """,
    )
    # the copy waits (IH002 at line 9); line 10's `.numpy()` of a GPU tensor is the copy itself (IH003)
    assert found == [("IH002", 9), ("IH003", 10)]


_GAN = {
    "main.py": """\
    import torch
    from solver import Solver

    torch.backends.cudnn.benchmark = True
    Solver().train()
    """,
    "solver.py": """\
    import torch
    from model import Generator


    class Solver:
        def __init__(self):
            self.g = Generator().cuda()
            self.opt = torch.optim.Adam(self.g.parameters())

        def train(self):
            for x in range(100):
                loss = self.g(torch.zeros(1, 3, 8, 8).cuda()).sum()
                loss.backward()
                self.opt.step()
    """,
    "model.py": """\
    import torch


    class Generator(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 3, 3)

        def forward(self, x):
            return self.conv(x).cuda()
    """,
}


def test_cudnn_benchmark_set_by_the_script_covers_modules_it_imports_two_deep(tmp_path):
    root = _project(tmp_path, _GAN)
    # main.py -> solver.py -> model.py: the switch is set for the process
    assert [r for r in _lint(root, "main.py", "solver.py", "model.py") if r[1] == "IH015"] == []


def test_cudnn_benchmark_unset_is_still_reported_at_the_convolution(tmp_path):
    files = dict(_GAN)
    # healthy twin: nobody sets it
    files["main.py"] = files["main.py"].replace("    torch.backends.cudnn.benchmark = True\n", "")
    root = _project(tmp_path, files)
    assert [r for r in _lint(root, "main.py", "solver.py", "model.py") if r[1] == "IH015"] == [
        ("model.py", "IH015", 7)
    ]
    # a script that sets it and does not import model.py covers nothing
    files["other.py"] = "import torch\n\ntorch.backends.cudnn.benchmark = True\n"
    root = _project(tmp_path / "other", files)
    assert [r for r in _lint(root, "main.py", "solver.py", "model.py", "other.py") if r[1] == "IH015"] == [
        ("model.py", "IH015", 7)
    ]


_WGAN = {
    "main.py": """\
    import argparse

    import torch
    from models.dcgan import DCGAN
    from models.wgan import WGAN

    args = argparse.ArgumentParser().parse_args()
    model = DCGAN() if args.model == "dcgan" else WGAN()
    model.train()
    """,
    "models/__init__.py": "",
    "models/dcgan.py": """\
    import torch


    class DCGAN:
        def __init__(self):
            self.net = torch.nn.Conv2d(3, 3, 3).cuda()
            self.opt = torch.optim.Adam(self.net.parameters())

        def train(self):
            for i in range(100):
                loss = self.net(torch.zeros(1, 3, 8, 8).cuda()).sum()
                loss.backward()
                self.opt.step()
    """,
}
_WGAN["models/wgan.py"] = _WGAN["models/dcgan.py"].replace("DCGAN", "WGAN")


def test_ih015_is_reported_once_where_the_script_importing_the_models_reports_it(tmp_path):
    root = _project(tmp_path, _WGAN)
    # main.py reports the missing switch (through dcgan.py, read for the project view): wgan.py's convolution,
    # imported by main.py, asks for the same line
    assert [r for r in _lint(root, "main.py", "models/wgan.py") if r[1] == "IH015"] == [
        ("main.py", "IH015", 8)
    ]


def test_ih015_of_a_module_stays_where_no_importer_reports_it(tmp_path):
    # healthy twin: linted alone, or with a script that reports nothing, the model file keeps its finding
    root = _project(tmp_path, _WGAN)
    assert [r for r in _lint(root, "models/wgan.py") if r[1] == "IH015"] == [("wgan.py", "IH015", 6)]


def test_a_tensor_rebuilt_on_the_host_from_a_batch_is_pageable(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch
        from torch.utils.data import DataLoader

        def train(model, ds, opt, n):
            loader = DataLoader(ds, batch_size=8, num_workers=4, pin_memory=True)
            for views, y in loader:
                views = torch.cat(views, dim=0)
                views = views.to("cuda")
                labels = torch.cat([torch.arange(8) for _ in range(2)], dim=0)
                labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
                labels = labels.to("cuda")
                ranks = torch.LongTensor(range(n)).unsqueeze(0).expand_as(labels).to("cuda")
                y = y.to("cuda")
                loss = model(views).sum() + labels.sum() + ranks.sum()
                loss.backward()
                opt.step()
        """,
    )
    # `torch.cat` of the pinned views, a comparison of host tensors, an expanded host tensor: pageable memory,
    # `non_blocking` would not overlap their copies; healthy twin: the pinned batch's `y` (line 13) is reported
    assert found == [("IH012", 13)]


_TRAINER = """\
import torch


class Trainer(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model.cuda()
        self.optim = torch.optim.Adam(model.parameters())
        self.register_buffer("steps", torch.tensor(0))
        self.register_buffer("ema_loss", torch.zeros(1, device="cuda"))

    def train_step(self, x):
        steps = int(self.steps.item())
        loss = self.model(x.cuda()).sum()
        loss.backward()
        self.optim.step()
        print(self.ema_loss.item())
        self.steps += 1

    def train(self, n):
        while self.steps < n:
            self.train_step(torch.zeros(2, 4))


if __name__ == "__main__":
    Trainer(torch.nn.Linear(4, 1)).train(100)
"""


def test_a_step_counter_buffer_of_a_trainer_kept_on_the_host_is_not_a_wait(tmp_path):
    # `steps` is registered from a Python number without a device in a trainer nothing moves: a host read;
    # healthy twin: the buffer made on the GPU (line 17) is reported
    assert _found(tmp_path, _TRAINER) == [("IH001", 17)]


def test_a_counter_buffer_of_a_trainer_moved_to_the_gpu_is_still_reported(tmp_path):
    moved = _TRAINER.replace(
        "Trainer(torch.nn.Linear(4, 1)).train(100)", "Trainer(torch.nn.Linear(4, 1)).cuda().train(100)"
    )
    assert _found(tmp_path, moved) == [("IH001", 13), ("IH001", 17)]
    itself = _TRAINER.replace(
        "        self.steps += 1\n", "        self.steps += 1\n        self.to('cuda')\n"
    )
    assert _found(tmp_path, itself) == [("IH001", 13), ("IH001", 17)]


_FACTORY = {
    "train_fns.py": """\
    import torch


    def gan_training_function(G, opt):
        def train(x):
            opt.zero_grad()
            loss = G(x).sum()
            loss.backward()
            opt.step()
            return {"loss": float(loss.item())}

        return train


    def dummy_training_function():
        def train(x):
            return {}

        return train


    def eval_function(G):
        def evaluate(x):
            return {"score": G(x).mean().item()}

        return evaluate
    """,
    "train.py": """\
    import torch

    import train_fns


    def run(config, loader):
        G = torch.nn.Linear(4, 4).cuda()
        opt = torch.optim.Adam(G.parameters())
        if config["gan"]:
            train = train_fns.gan_training_function(G, opt)
        else:
            train = train_fns.dummy_training_function()
        evaluate = train_fns.eval_function(G)
        for x in loader:
            metrics = train(x.cuda())
        for x in loader:
            scores = evaluate(x.cuda())


    if __name__ == "__main__":
        run({"gan": True}, [torch.zeros(2, 4)])
    """,
}


def test_a_function_returned_by_a_factory_runs_where_its_result_is_called(tmp_path):
    root = _project(tmp_path, _FACTORY)
    # `train = train_fns.gan_training_function(...)` (or the dummy, by an option) returns its nested `train`:
    # the loop calling it trains, its `.item()` runs every step; healthy twin: the evaluation closure, called
    # in a loop that takes no step, is not per step
    assert _lint(root, "train.py", "train_fns.py") == [("train_fns.py", "IH001", 10)]


def test_cudnn_benchmark_set_by_an_imported_utility_does_not_cover_the_program(tmp_path):
    files = dict(_GAN)
    # healthy twin: a module that sets it on one path (a webcam stream loader) and that the script imports is not
    # where the program starts: the model two imports below the script is still reported
    files["main.py"] = files["main.py"].replace(
        "    torch.backends.cudnn.benchmark = True\n", "    import streams\n"
    )
    files["streams.py"] = """\
    import torch
    import solver


    class LoadStreams:
        def __init__(self):
            torch.backends.cudnn.benchmark = True
    """
    root = _project(tmp_path, files)
    assert [r for r in _lint(root, "main.py", "solver.py", "model.py", "streams.py") if r[1] == "IH015"] == [
        ("model.py", "IH015", 7)
    ]
