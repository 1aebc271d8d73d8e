"""The lint fixes made after scoring set G (benchmarks/lint_heldout_G.tsv, issue 32; G is a development set since):
branches that hold now and then (a flag computed from `step % N`, a timer that resets itself) and a `% N` that holds
every step (N a module constant of 1); functions run without being called by name (a `functools.partial`, a method
handed to a retry helper, a hook); a pinned test loader that does not pin the training batches; a loader prepared by
Accelerate under `self.`; host tensors filled in place. Each idiom is written here from scratch, with a healthy twin
that must stay quiet."""

from __future__ import annotations

import textwrap
from pathlib import Path

from idlehound.lint import lint_paths

from .lint_snippets import found as _found
from .lint_snippets import project as _project


def _lint(root: Path, *names: str) -> list[tuple[str, str, int]]:
    return sorted((Path(f.file).name, f.rule, f.line) for f in lint_paths([root / n for n in names]))


def test_a_flag_computed_from_a_modulo_test_is_periodic(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch

        def train(model, loader, opt, every):
            for i, (x, y) in enumerate(loader):
                loss = model(x.cuda()).sum()
                loss.backward()
                opt.step()
                is_console_step = i % 100 == 0
                is_metric_step = (i % every == 0) or is_console_step
                if is_metric_step:
                    print(loss.item())
                is_big = loss > 1
                if is_big:
                    big = loss.item()
        """,
    )
    # the flag of a `%` test (also through another flag) runs every `every` steps; a tensor flag is per step
    assert found == [("IH001", 14), ("IH007", 13)]


def test_a_timer_that_resets_itself_is_not_per_step(tmp_path):
    found = _found(
        tmp_path,
        """\
        import time
        import torch

        def train(model, loader, opt, freq):
            last = time.time()
            start = time.time()
            for x, y in loader:
                loss = model(x.cuda()).sum()
                loss.backward()
                opt.step()
                now = time.time()
                if now - last > freq:
                    print(loss.item())
                    last = now
                if now - start > freq:
                    print(loss.item())
        """,
    )
    # line 13 runs once per `freq` seconds; line 16's branch does not reset `start`: after `freq`, every step
    assert found == [("IH001", 16)]


def test_a_modulo_by_a_module_constant_of_one_holds_every_step(tmp_path):
    script = """\
    import torch

    log_interval = 1
    eval_interval = 100

    def train(model, loader, opt):
        for it, (x, y) in enumerate(loader):
            loss = model(x.cuda()).sum()
            loss.backward()
            opt.step()
            if it % log_interval == 0:
                print(loss.item())
            if it % eval_interval == 0:
                print(loss.item())
    """
    assert _found(tmp_path, script) == [("IH001", 12)]
    # a module that runs a configurator with `exec` may rebind its constants: the `%` stays periodic
    configured = script.replace(
        "eval_interval = 100\n", "eval_interval = 100\n    exec(open('config.py').read())\n"
    )
    assert _found(tmp_path, configured) == []


def test_a_partial_of_a_backward_helper_makes_a_training_loop(tmp_path):
    found = _found(
        tmp_path,
        """\
        from functools import partial
        import torch

        def loss_backwards(fp16, loss, optimizer):
            if fp16:
                loss = loss * 2
            loss.backward()

        def log_helper(fp16, loss):
            return loss

        def train(model, loader, opt, fp16):
            backwards = partial(loss_backwards, fp16)
            logs = partial(log_helper, fp16)
            total = torch.tensor(0.0).cuda()
            for x, y in loader:
                loss = model(x.cuda()).sum()
                backwards(loss, opt)
                total += loss.detach().item()
            for x, y in loader:
                loss = model(x.cuda()).sum()
                logs(loss)
                print(loss.item())
            opt.step()
        """,
    )
    # the first loop steps through the partial; `fp16` is not read as the tensor passed (line 5 stays quiet);
    # the second loop's partial does no backward: not a training loop
    assert found == [("IH001", 19)]


def test_a_method_handed_to_a_retry_helper_and_a_hook_run_per_step(tmp_path):
    root = _project(
        tmp_path,
        {
            "trainer.py": """\
            import torch

            def raise_if_nan(t):
                if torch.isnan(t):
                    raise ValueError("nan")

            def shape_of(t):
                if torch.isnan(t):
                    raise ValueError("nan")

            class Trainer:
                def __init__(self, model):
                    self.model = model.cuda()
                    self.opt = torch.optim.Adam(model.parameters())
                    self.steps = 0

                def train(self, x):
                    loss = self.model(x.cuda()).sum()
                    loss.register_hook(raise_if_nan)
                    loss.backward()
                    self.opt.step()
                    self.steps += 1
                    print(loss.item())

                def report(self):
                    print(self.model.weight.sum().item())
            """,
            "cli.py": """\
            from retry import retry_call
            from trainer import Trainer, shape_of

            def run(model, x, n):
                trainer = Trainer(model)
                while trainer.steps < n:
                    retry_call(trainer.train, fargs=[x], tries=3)
                    sorted([1, 2], key=shape_of)
                retry_call(trainer.report, tries=3)
            """,
        },
    )
    # `trainer.train` runs once per turn of the loop in cli.py: a training step; the hook runs in each backward;
    # a function given by keyword (`key=`) and the report after the loop are not per step
    assert _lint(root, "cli.py", "trainer.py") == [
        ("trainer.py", "IH001", 23),
        ("trainer.py", "IH007", 4),
    ]


def test_a_pinned_test_loader_does_not_pin_the_training_batches(tmp_path):
    script = """\
    import torch
    from torch.utils.data import DataLoader

    def train(model, train_set, test_set, opt):
        loader = DataLoader(train_set, batch_size=8, num_workers=4)
        test_loader = DataLoader(test_set, batch_size=8, num_workers=4, pin_memory=True)
        for x, y in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            opt.step()
    """
    assert _found(tmp_path, script) == [("IH011", 5)]
    pinned = script.replace("batch_size=8, num_workers=4)", "batch_size=8, num_workers=4, pin_memory=True)")
    assert _found(tmp_path, pinned) == [("IH012", 8)]


def test_a_loader_prepared_by_accelerate_under_self_is_the_frameworks(tmp_path):
    script = """\
    from accelerate import Accelerator
    from torch.utils.data import DataLoader

    class Trainer:
        def __init__(self, net, dataset, opt):
            self.accelerator = Accelerator()
            self.dataloader = DataLoader(dataset, batch_size=8, num_workers=4)
            self.net, self.opt, self.dataloader = self.accelerator.prepare(net, opt, self.dataloader)

        def fit(self):
            for x in self.dataloader:
                loss = self.net(x).sum()
                self.accelerator.backward(loss)
                self.opt.step()
    """
    assert _found(tmp_path, script) == []
    # the same loader, not handed to `prepare`: the batches are copied from pageable memory
    unprepared = script.replace("prepare(net, opt, self.dataloader)", "prepare(net, opt, other)")
    assert _found(tmp_path, unprepared) == [("IH011", 7)]


def test_a_host_tensor_filled_in_place_is_host_built(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch
        from torch.utils.data import DataLoader

        def train(model, dataset, opt, n):
            loader = DataLoader(dataset, batch_size=8, num_workers=4, pin_memory=True)
            for x, y in loader:
                noise = torch.FloatTensor(n, 4).uniform_(0.0, 1.0).cuda()
                target = torch.zeros(n, 4).scatter_(1, y.unsqueeze(1), 1).cuda()
                loss = model(x.cuda(), noise, target).sum()
                loss.backward()
                opt.step()
        """,
    )
    # the noise and the one-hot target are pageable host tensors: only the pinned batch's copy is IH012
    assert found == [("IH012", 9)]


def test_a_base_class_loop_runs_a_subclass_override_of_another_file(tmp_path):
    engine = """\
    import torch


    class Engine:
        def __init__(self, model, loader):
            self.model = model.cuda()
            self.loader = loader

        def train(self):
            for data in self.loader:
                summary = self.forward_backward(data)

        def forward_backward(self, data):
            raise NotImplementedError

        def test(self):
            for data in self.loader:
                self.extract(data)

        def extract(self, data):
            raise NotImplementedError
    """
    softmax = """\
    import torch
    from engine import Engine


    class SoftmaxEngine(Engine):
        def forward_backward(self, data):
            imgs, pids = data
            loss = self.model(imgs.cuda()).sum()
            loss.backward()
            self.optimizer.step()
            return {"loss": loss.item()}

        def extract(self, data):
            return self.model(data.cuda()).sum().item()
    """
    root = _project(tmp_path, {"engine.py": engine, "softmax.py": softmax})
    # `self.forward_backward(data)` in Engine.train runs the override every step; `extract` (no backward, called
    # from an evaluation loop) is not per step
    assert _lint(root, "engine.py", "softmax.py") == [("softmax.py", "IH001", 11)]
    # a class of the same name that does not subclass the imported Engine: not an override
    (root / "softmax.py").write_text(textwrap.dedent(softmax).replace("(Engine)", "(object)"))
    assert _lint(root, "engine.py", "softmax.py") == []


def test_a_module_imported_by_name_from_its_package_gives_its_helpers(tmp_path):
    train = """\
    import torch
    from utils import array_tool as at


    def train(model, loader, opt):
        for x, y in loader:
            out = model(x.cuda())
            out.sum().backward()
            opt.step()
            boxes = at.tonumpy(out)
        print(at.scalar(out))
    """
    tool = """\
    import torch


    def tonumpy(data):
        return data.detach().cpu().numpy()


    def scalar(data):
        return data.item()
    """
    root = _project(tmp_path, {"train.py": train, "utils/__init__.py": "", "utils/array_tool.py": tool})
    # `at.tonumpy(out)` every step: reported in the helper; `at.scalar` after the loop is not per step
    assert _lint(root, "train.py", "utils/array_tool.py") == [("array_tool.py", "IH002", 5)]


def test_a_loop_over_a_loader_attribute_pinned_in_another_file_copies_pinned_batches(tmp_path):
    data = """\
    import torch


    class DataManager:
        def __init__(self, dataset, use_gpu):
            self.use_gpu = use_gpu
            self.train_loader = torch.utils.data.DataLoader(dataset, num_workers=4, pin_memory=self.use_gpu)
    """
    engine = """\
    import torch


    class Engine:
        def __init__(self, datamanager, model, opt):
            self.train_loader = datamanager.train_loader
            self.model, self.opt = model.cuda(), opt

        def train(self):
            for i, (imgs, pids) in enumerate(self.train_loader):
                loss = self.model(imgs.cuda()).sum()
                loss.backward()
                self.opt.step()
    """
    root = _project(tmp_path, {"data.py": data, "engine.py": engine})
    assert _lint(root, "data.py", "engine.py") == [("engine.py", "IH012", 11)]
    # the data manager does not pin: the copy is of pageable memory, nothing to overlap
    (root / "data.py").write_text(
        textwrap.dedent(data).replace("pin_memory=self.use_gpu", "pin_memory=False")
    )
    assert _lint(root, "data.py", "engine.py") == []


def test_the_last_batch_of_a_pass_runs_once_per_epoch(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch

        def train(model, loader, opt, k):
            for i, (x, y) in enumerate(loader):
                loss = model(x.cuda()).sum()
                loss.backward()
                opt.step()
                if i == len(loader) - 1:
                    print(loss.item())
                if i == k:
                    last = loss.item()
                if i != len(loader) - 1:
                    print(loss.item())
        """,
    )
    # line 9 runs once per epoch; `i == k` is not known to hold once (a Python k may be anything); `!=` every step
    assert found == [("IH001", 11), ("IH001", 13)]
