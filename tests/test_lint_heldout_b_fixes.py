"""The lint fixes made after scoring held-out set B (benchmarks/lint_heldout_B.tsv, issue 32): a branch that ends the
program runs at most once, a class call builds an object (not a tensor), a `%` format string built with `*`, a
device given by a `dev()` helper, and per-step code three calls below the training loop. Each idiom is written
here from scratch, with the look-alike that must still be reported."""

import textwrap

from idlehound.lint import lint_paths

from .lint_snippets import found as _found


def test_a_branch_that_exits_the_program_runs_at_most_once(tmp_path):
    found = _found(
        tmp_path,
        """\
        import math, sys
        import torch

        def train(model, loader, opt):
            for x in loader:
                loss = model(x.cuda()).mean()
                if not math.isfinite(loss.item()):
                    print("loss is {}, stopping".format(loss.item()))
                    sys.exit(1)
                if torch.isnan(loss):
                    raise RuntimeError(f"nan loss {loss}")
                loss.backward()
                opt.step()
        """,
    )
    # the tests run every step (an .item(), a tensor condition); the bodies that end the run do not
    assert found == [("IH001", 7), ("IH007", 10)]


def test_a_branch_that_goes_on_is_still_per_step(tmp_path):
    found = _found(
        tmp_path,
        """\
        import sys
        import torch

        def train(model, loader, opt, verbose):
            for x in loader:
                loss = model(x.cuda()).mean()
                if verbose:
                    print("loss", loss.item())
                else:
                    sys.exit(1)
                loss.backward()
                opt.step()
        """,
    )
    # the `else` exits; the `if` body runs every step when verbose
    assert found == [("IH001", 8)]


def test_a_class_named_like_a_model_builds_an_object_not_a_tensor(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch
        from utils import ModelEMA

        def train(model, loader, opt, rank):
            ema = ModelEMA(model) if rank in (-1, 0) else None
            for x in loader:
                out = model(x.cuda())
                loss = out.mean()
                loss.backward()
                opt.step()
                if ema:
                    ema.update(model)
                if out.sum() > 0:
                    pass
        """,
    )
    # `if ema:` asks whether an object exists; `out.sum() > 0` (a model's output) still reads the GPU
    assert found == [("IH007", 13)]


def test_a_percent_format_string_built_with_a_product(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch

        def train(model, loader, opt, epoch):
            mloss = torch.zeros(3, device="cuda")
            for i, x in enumerate(loader):
                loss, items = model(x.cuda())
                loss.backward()
                opt.step()
                mloss = (mloss * i + items) / (i + 1)
                print(("%10s" * 2 + "%10.4g" * 3) % (epoch, i, *mloss))
                print(("%10s" * 2) % (epoch, i))
        """,
    )
    # the first line formats a GPU tensor's elements; the second only Python values
    assert found == [("IH005", 10)]


def test_a_model_moved_to_a_dev_helper_is_on_the_gpu(tmp_path):
    (tmp_path / "datasets.py").write_text(
        textwrap.dedent(
            """\
            from torch.utils.data import DataLoader

            def load_data(dataset, batch_size):
                return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=1)
            """
        )
    )
    (tmp_path / "train.py").write_text(
        textwrap.dedent(
            """\
            import dist_util
            from datasets import load_data

            def main(model, dataset):
                model.to(dist_util.dev())
                data = load_data(dataset, 8)
            """
        )
    )
    found = sorted((x.file.rsplit("/", 1)[-1], x.rule, x.line) for x in lint_paths([tmp_path]))
    # the loader's file shows no GPU; the script that imports it moves the model with `.to(dist_util.dev())`
    assert found == [("datasets.py", "IH011", 4)]


def test_a_device_word_alone_is_not_a_dev_helper(tmp_path):
    found = _found(
        tmp_path,
        """\
        from torch.utils.data import DataLoader

        def main(model, dataset, developer):
            model.to(developer)
            return DataLoader(dataset, batch_size=8)
        """,
    )
    assert found == []


def test_per_step_code_three_calls_below_the_loop(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch

        class Trainer:
            def run_loop(self):
                for batch in self.data:
                    self.run_step(batch.cuda())

            def run_step(self, batch):
                self.model(batch).mean().backward()
                self.optimize()

            def optimize(self):
                self.log_grad_norm()
                self.opt.step()

            def log_grad_norm(self):
                sqsum = 0.0
                for p in self.params:
                    sqsum += (p.grad ** 2).sum().item()
                return sqsum

            def helper_four(self):
                return self.params[0].grad.sum().item()
        """,
    )
    assert found == [("IH001", 19)]


def test_any_over_tensors_decides_a_condition(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch as th

        def train(model, params, loader, opt, names):
            for x in loader:
                model(x.cuda()).mean().backward()
                if any(not th.isfinite(p.grad).all() for p in params):
                    continue
                if any(n.startswith("bias") for n in names):
                    pass
                opt.step()
        """,
    )
    # any() takes the truth of every gradient check (a host read each); names are Python strings
    assert found == [("IH007", 6)]
