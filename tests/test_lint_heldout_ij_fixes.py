"""The lint fixes made after scoring sets I and J (benchmarks/lint_heldout_I.tsv, _J.tsv, issue 32; both are
development sets since): a step function a framework runs (`Engine(train_step)`), host copies handed to a helper
(`log(loss.cpu())`), a loader drained inside one expression, a script whose `--device` defaults to "cpu", a loss
term behind an option declared with default 0, and the first batch of a pass. Each idiom is written here from
scratch, with a healthy twin beside each silence (the true pattern still flagged)."""

from __future__ import annotations

from pathlib import Path

from idlehound.lint import lint_paths

from .lint_snippets import found as _found
from .lint_snippets import project as _project


def _lint(root: Path, *names: str) -> list[tuple[str, str, int]]:
    return sorted((Path(f.file).name, f.rule, f.line) for f in lint_paths([root / n for n in names]))


_ENGINE = """\
import torch
from somelib import Engine


def run(model, loader, opt, device="cuda"):
    def train_step(engine, batch):
        x, y = batch[0].to(device), batch[1].to(device)
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return {"loss": loss.item(), "acc": out.argmax(1).eq(y).float().mean().item()}

    def eval_step(engine, batch):
        out = model(batch[0].to(device))
        return {"score": out.max().item()}

    trainer = Engine(train_step)
    evaluator = Engine(eval_step)
    trainer.run(loader, max_epochs=3)
"""


def test_a_step_function_handed_to_a_framework_runs_every_batch(tmp_path):
    # no visible loop: the engine calls train_step once per batch; its `.item()` calls wait every step
    assert _found(tmp_path, _ENGINE) == [("IH001", 13)]


def test_a_handed_function_without_a_step_is_not_per_step(tmp_path):
    # the evaluator's function (no backward, no optimizer step) stays quiet, as does a train step that is called
    # by name (its loop, if any, decides) or only hands a sub-function on
    assert (
        _found(tmp_path, _ENGINE.replace("trainer = Engine(train_step)", "trainer = Engine(eval_step)")) == []
    )


def test_a_handed_function_in_a_cpu_only_file_is_quiet(tmp_path):
    cpu = _ENGINE.replace('device="cuda"', 'device="cpu"').replace(".to(device)", "")
    assert _found(tmp_path, cpu) == []


_LOG = """\
class Log:
    def __init__(self):
        self.total = 0.0
        self.steps = 0

    def __call__(self, loss, correct):
        self._step(loss, correct)

    def _step(self, loss, correct):
        self.total += loss.sum().item()
        self.hits = correct.sum().item()
        self.steps += 1
        if self.steps % 100 == 0:
            loss = self.total / self.steps
            print(loss)
"""

_TRAIN = """\
import torch
from log import Log


def train(model, loader, opt):
    log = Log()
    for x, y in loader:
        out = model(x.cuda())
        loss = torch.nn.functional.cross_entropy(out, y.cuda(), reduction="none")
        loss.mean().backward()
        opt.step()
        log(loss.cpu(), (out.argmax(1) == y.cuda()).cpu())
"""


def test_item_of_a_host_copy_handed_to_a_helper_is_not_a_wait(tmp_path):
    root = _project(tmp_path, {"log.py": _LOG, "train.py": _TRAIN})
    # the wait is the `.cpu()` copy at the call (IH002); `.item()` of the copies inside Log reads host memory
    assert _lint(root, "train.py", "log.py") == [("train.py", "IH002", 12)]


def test_item_of_a_device_tensor_handed_to_a_helper_is_still_reported(tmp_path):
    healthy = _TRAIN.replace(
        "log(loss.cpu(), (out.argmax(1) == y.cuda()).cpu())", "log(loss, out.argmax(1) == y.cuda())"
    )
    root = _project(tmp_path, {"log.py": _LOG, "train.py": healthy})
    assert _lint(root, "train.py", "log.py") == [("log.py", "IH001", 10), ("log.py", "IH001", 11)]


_STATS = """\
import torch
from torch.utils.data import DataLoader


class Data:
    def __init__(self, train_set, batch_size):
        data = torch.cat([d[0] for d in DataLoader(train_set)])
        self.mean, self.std = data.mean(), data.std()
        self.train = DataLoader(train_set, batch_size=batch_size, num_workers=4, pin_memory=True)


def train(model, data, opt):
    for x, y in data.train:
        loss = model(x.cuda(non_blocking=True)).sum()
        loss.backward()
        opt.step()
"""


def test_a_loader_drained_inside_one_expression_is_not_a_training_loader(tmp_path):
    # the statistics pass at start-up has no step per batch: its workers and pinning cost no GPU time
    assert _found(tmp_path, _STATS) == []


def test_a_training_loader_without_workers_is_still_reported(tmp_path):
    healthy = _STATS.replace(", num_workers=4, pin_memory=True", "")
    assert _found(tmp_path, healthy) == [("IH010", 9), ("IH011", 9)]


_CPU_DEFAULT = """\
import argparse
import torch


def train(model, loader, opt, device):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        print(loss.item())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", type=str, default="cpu")
    args = parser.parse_args()
    if torch.cuda.is_available():
        print("a GPU is there; pass --device to use it")
    train(torch.nn.Linear(4, 2), [], None, args.device)
"""


def test_a_script_whose_device_defaults_to_cpu_runs_on_the_cpu(tmp_path):
    assert _found(tmp_path, _CPU_DEFAULT) == []


def test_a_script_whose_device_defaults_to_cuda_is_still_checked(tmp_path):
    healthy = _CPU_DEFAULT.replace('default="cpu"', 'default="cuda"')
    assert _found(tmp_path, healthy) == [("IH001", 11)]
    # `.cuda()` anywhere puts it on the GPU whatever the option says
    assert _found(
        tmp_path, _CPU_DEFAULT.replace("torch.nn.Linear(4, 2)", "torch.nn.Linear(4, 2).cuda()")
    ) == [("IH001", 11)]


_OPTIONS = """\
import argparse


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--l2_lambda", type=float, default=1.0)
    p.add_argument("--crop_lambda", type=float, default=0)
    p.add_argument("--use_wandb", action="store_true")
    return p.parse_args()
"""

_COACH = """\
import torch
import torch.nn.functional as F


class Coach:
    def __init__(self, opts, net, loader):
        self.opts, self.net, self.loader = opts, net.cuda(), loader
        self.opt = torch.optim.Adam(net.parameters())

    def train(self):
        for batch_idx, (x, y) in enumerate(self.loader):
            x, y = x.cuda(), y.cuda()
            y_hat = self.net(x)
            loss, logs = self.calc_loss(y, y_hat)
            loss.backward()
            self.opt.step()
            if self.opts.use_wandb and batch_idx == 0:
                print(y_hat.cpu())

    def calc_loss(self, y, y_hat):
        logs = {}
        loss_l2 = F.mse_loss(y_hat, y)
        loss = loss_l2 * self.opts.l2_lambda
        if self.opts.l2_lambda > 0:
            logs["l2"] = float(loss_l2)
        if self.opts.crop_lambda > 0:
            loss_crop = F.mse_loss(y_hat[:, 4:-4], y[:, 4:-4])
            logs["crop"] = float(loss_crop)
            loss = loss + loss_crop * self.opts.crop_lambda
        return loss, logs
"""


def test_a_loss_term_behind_an_option_declared_zero_is_not_per_step(tmp_path):
    # the options live in a file nobody imports from the coach (found by a text search of the project)
    root = _project(tmp_path, {"options.py": _OPTIONS, "coach.py": _COACH})
    # `l2_lambda` defaults to 1.0: its float() waits every step; `crop_lambda` defaults to 0: off unless set;
    # the first batch of each pass (`batch_idx == 0`) is once per epoch
    assert _lint(root, "coach.py") == [("coach.py", "IH006", 25)]


def test_an_option_set_elsewhere_or_declared_on_is_still_per_step(tmp_path):
    root = _project(
        tmp_path, {"options.py": _OPTIONS.replace("default=0)", "default=0.5)"), "coach.py": _COACH}
    )
    assert _lint(root, "coach.py") == [("coach.py", "IH006", 25), ("coach.py", "IH006", 28)]
    # declared 0 but set in code: someone turns it on
    code = _COACH.replace("self.opts, self.net", "opts.crop_lambda = 0.1\n        self.opts, self.net")
    (root / "options.py").write_text(_OPTIONS)
    (root / "coach.py").write_text(code)
    assert _lint(root, "coach.py") == [("coach.py", "IH006", 26), ("coach.py", "IH006", 29)]


def test_a_plain_flag_and_a_later_batch_stay_per_step(tmp_path):
    # a store_true flag the documented command passes is on (an undocumented one is off: _offflags.py);
    # `batch_idx == 3` is not the first batch
    code = _COACH.replace("self.opts.use_wandb and batch_idx == 0", "self.opts.use_wandb and batch_idx == 3")
    readme = "python train.py --use_wandb\n"
    root = _project(tmp_path, {"options.py": _OPTIONS, "coach.py": code, "README.md": readme})
    assert _lint(root, "coach.py") == [("coach.py", "IH002", 18), ("coach.py", "IH006", 25)]


_PKG_INIT = """\
from .trainer import PriorTrainer
"""

_PKG_TRAINER = """\
import torch


class PriorTrainer(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model.cuda()
        self.opt = torch.optim.Adam(model.parameters())
        self.register_buffer("step", torch.tensor([0]))

    def forward(self, x):
        loss = self.model(x).mean()
        loss.backward()
        return loss

    def update(self):
        self.opt.step()
        self.opt.zero_grad()
        self.step += 1
"""

_TRAIN_PRIOR = """\
import torch
from prior import PriorTrainer


def train(trainer: PriorTrainer, loader):
    for x in loader:
        trainer.train()
        current = trainer.step.item()
        loss = trainer(x.cuda())
        trainer.update()
"""


def test_a_class_re_exported_by_a_package_and_annotated_runs_its_step(tmp_path):
    files = {"prior/__init__.py": _PKG_INIT, "prior/trainer.py": _PKG_TRAINER, "train.py": _TRAIN_PRIOR}
    root = _project(tmp_path, files)
    # `trainer: PriorTrainer` (imported through prior/__init__.py): `trainer.update()` takes the optimizer step,
    # so the loop trains, and the step counter read every step is a wait
    assert ("train.py", "IH001", 8) in _lint(root, "train.py")


def test_an_unannotated_parameter_of_unknown_class_is_not_followed(tmp_path):
    files = {"prior/__init__.py": _PKG_INIT, "prior/trainer.py": _PKG_TRAINER}
    files["train.py"] = _TRAIN_PRIOR.replace("trainer: PriorTrainer", "trainer")
    root = _project(tmp_path, files)
    assert _lint(root, "train.py") == []


_TIMED = """\
import torch
from timers import Timer


def gather_min(x):
    return torch.tensor([x]).cuda().min()


def train(model, loader, opt, every_seconds):
    countdown = Timer()
    for x, y in loader:
        loss = model(x.cuda()).sum()
        loss.backward()
        opt.step()
        delta = gather_min(countdown.elapsed())
        if delta > every_seconds:
            last = loss.item()
            countdown.reset()
"""


def test_a_branch_that_resets_its_timer_runs_once_per_interval(tmp_path):
    # the tensor condition waits every step (IH007); the `.item()` inside runs once per interval
    assert _found(tmp_path, _TIMED) == [("IH007", 16)]


def test_a_timed_branch_that_does_not_reset_its_timer_stays_per_step(tmp_path):
    healthy = _TIMED.replace("            countdown.reset()\n", "")
    assert _found(tmp_path, healthy) == [("IH001", 17), ("IH007", 16)]


_ACCUMULATE = """\
import argparse
import torch


def train(args, model, loader, opt):
    for step, (x, y) in enumerate(loader):
        loss = model(x.cuda()).sum() / args.accumulation_steps
        loss.backward()
        if (step + 1) % args.accumulation_steps == 0:
            print(loss.item())
            opt.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--accumulation_steps", type=int, default=1)
    train(parser.parse_args(), None, [], None)
"""


def test_a_modulo_by_an_option_declared_one_holds_every_step(tmp_path):
    assert _found(tmp_path, _ACCUMULATE) == [("IH001", 10)]


def test_a_modulo_by_an_option_declared_above_one_is_periodic(tmp_path):
    assert _found(tmp_path, _ACCUMULATE.replace("default=1)", "default=8)")) == []


_PHASES = """\
import torch
from torch.utils.data import DataLoader


def train(phases, dataset, device, kimg_per_tick, total):
    it = iter(DataLoader(dataset, batch_size=32, pin_memory=True, num_workers=4))
    cur, tick_start = 0, 0
    while True:
        img, c = next(it)
        img = img.to(device)
        for phase in phases:
            loss = phase.module(img).mean()
            loss.backward()
            phase.opt.step()
        cur += img.shape[0]
        if cur < tick_start + kimg_per_tick:
            continue
        print(float(loss.cpu()))
        tick_start = cur
        if cur >= total:
            break
"""


def test_a_loop_that_draws_its_batch_and_steps_in_phases_is_a_training_loop(tmp_path):
    # the batch copy from the pinned loader blocks every step (IH012); after the tick gate `continue`, the
    # status line runs once per tick
    assert _found(tmp_path, _PHASES) == [("IH012", 10)]


def test_the_work_after_a_tick_gate_that_never_resets_stays_per_step(tmp_path):
    healthy = _PHASES.replace("        tick_start = cur\n", "")
    assert _found(tmp_path, healthy) == [("IH002", 18), ("IH012", 10)]


def test_an_epoch_loop_drawing_no_batch_is_not_a_training_loop(tmp_path):
    # an outer loop whose inner loop draws the batches: what it does once per epoch is not per step
    epoch = """\
    import torch


    def train(model, loader, opt, device, epochs):
        for epoch in range(epochs):
            model.to(device)
            for x in loader:
                loss = model(x.to(device, non_blocking=True)).mean()
                loss.backward()
                opt.step()
            print(loss.item())
    """
    assert _found(tmp_path, epoch) == []


_PROFILED = """\
import time
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(8, 8) for _ in range(4)])

    def forward(self, x, profile=False):
        return self.forward_once(x, profile)

    def forward_once(self, x, profile=False):
        for m in self.layers:
            if profile:
                torch.cuda.synchronize()
                t = time.time()
            x = m(x)
        return x


def train(loader, opt):
    model = Model().cuda()
    for x in loader:
        loss = model(x.cuda(non_blocking=True)).sum()
        loss.backward()
        opt.step()
"""


def test_a_switch_left_off_along_the_call_path_is_not_taken(tmp_path):
    # `model(x)` leaves `profile` False, and forward hands that on: the synchronize is not on the training path
    assert _found(tmp_path, _PROFILED) == []


def test_a_switch_turned_on_by_the_caller_is_per_step(tmp_path):
    healthy = _PROFILED.replace(
        "loss = model(x.cuda(non_blocking=True))", "loss = model(x.cuda(non_blocking=True), profile=True)"
    )
    assert _found(tmp_path, healthy) == [("IH008", 16)]


_METER = """\
import torch


class {cls}:
    def __init__(self):
        self.sums = {{}}

    def update(self, values):
        for k, v in values.items():
            if isinstance(v, torch.Tensor):
                v = v.item()
            self.sums[k] = self.sums.get(k, 0.0) + v


def train(model, loader, opt):
    meter = {cls}()
    for x, y in loader:
        loss = model(x.cuda()).sum()
        loss.backward()
        opt.step()
        meter.update({{"loss": loss.item()}})
"""


def test_a_metric_meters_own_isinstance_conversion_is_left_to_its_callers(tmp_path):
    # the caller passes a Python float (its own `.item()` is the wait, line 21); the meter converts only tensors
    assert _found(tmp_path, _METER.format(cls="MetricMeter")) == [("IH001", 21)]


def test_a_plain_converter_class_is_still_checked(tmp_path):
    # not a logger/meter: its `.item()` on a value of unknown kind is reported, as before
    assert _found(tmp_path, _METER.format(cls="Converter")) == [("IH001", 11), ("IH001", 21)]


_SEEDS = """\
import torch
import torch.backends.cudnn as cudnn


def init_seeds(seed=0):
    torch.manual_seed(seed)
    if seed == 0:
        cudnn.benchmark, cudnn.deterministic = {first}
    else:
        cudnn.benchmark, cudnn.deterministic = {second}


def train(loader, opt):
    init_seeds(1)
    model = torch.nn.Conv2d(3, 8, 3).cuda()
    for x in loader:
        loss = model(x.cuda(non_blocking=True)).sum()
        loss.backward()
        opt.step()
"""


def test_cudnn_benchmark_set_in_a_tuple_assignment_counts_as_set(tmp_path):
    assert _found(tmp_path, _SEEDS.format(first="False, True", second="True, False")) == []


def test_cudnn_benchmark_only_ever_false_in_a_tuple_assignment_is_not_set(tmp_path):
    assert _found(tmp_path, _SEEDS.format(first="False, True", second="False, False")) == [("IH015", 15)]


_CHECKPOINTED = """\
import torch


class Trainer:
    def __init__(self, model, every):
        self.model = model.cuda()
        self.opt = torch.optim.Adam(model.parameters())
        self.steps = torch.zeros(1, device="cuda")
        self.every = every

    def update(self):
        self.opt.step()
        self.steps += 1
        total = int(self.steps.sum().item())
        if total % self.every:
            return
        self.save(self.steps.cpu())

    def save(self, steps):
        torch.save({"steps": steps}, "ckpt.pt")


def train(trainer, loader):
    for x in loader:
        trainer.model(x.cuda(non_blocking=True)).sum().backward()
        trainer.update()


trainer = Trainer(torch.nn.Linear(4, 4), 100)
train(trainer, [])
"""


def test_the_rest_of_a_function_after_a_modulo_return_is_periodic(tmp_path):
    # the step counter read every update is a wait (line 14); the checkpoint copy after the `% every` return is
    # once every `every` steps
    assert _found(tmp_path, _CHECKPOINTED) == [("IH001", 14)]


def test_the_rest_after_a_plain_return_stays_per_step(tmp_path):
    healthy = _CHECKPOINTED.replace("if total % self.every:", "if total < 0:")
    assert _found(tmp_path, healthy) == [("IH001", 14), ("IH002", 17)]


def test_a_step_function_spawned_once_per_process_is_not_per_batch(tmp_path):
    spawned = _ENGINE.replace(
        "trainer = Engine(train_step)", "torch.multiprocessing.spawn(train_step, nprocs=2)"
    )
    assert _found(tmp_path, spawned) == []


def test_a_loader_wrapped_in_a_returned_generator_is_still_a_training_loader(tmp_path):
    wrapped = """\
    import torch
    from torch.utils.data import DataLoader


    def get_loader(ds):
        return (x for x in DataLoader(ds, batch_size=8))


    def train(model, ds, opt):
        for x in get_loader(ds):
            loss = model(x.cuda()).sum()
            loss.backward()
            opt.step()
    """
    assert _found(tmp_path, wrapped) == [("IH010", 6), ("IH011", 6)]
