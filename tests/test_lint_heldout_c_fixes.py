"""The lint fixes made after scoring held-out set C (benchmarks/lint_heldout_C.tsv, issue 32): a tensor handed to
a metric logger every step, an all-reduce helper named `average_*`, a DataLoader subclass of a library, and GPUs
given to a Lightning Trainer. Each idiom is written here from scratch, with look-alikes that must stay quiet."""

import textwrap

from .lint_snippets import found as _found


def test_a_tensor_handed_to_a_metric_logger_every_step_is_a_host_read(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch
        import wandb

        def train(model, loader, opt, meters, tb_writer, run_logger):
            for step, (x, y) in enumerate(loader):
                out = model(x.cuda())
                loss = torch.nn.functional.cross_entropy(out, y.cuda())
                acc = (out.argmax(-1) == y.cuda()).float().mean()
                meters.update(acc=acc)
                meters.metric_logger.update(acc=acc)
                tb_writer.add_scalar("train/acc", acc, step)
                wandb.log({"acc": acc})
                wandb.log(dict(loss=loss, step=step))
                run_logger._wandb.log({"loss": loss}, commit=False)
                loss.backward()
                opt.step()
        """,
    )
    # `meters` is no logger (an AverageMeter may keep a running sum on the device); the others read on the host
    assert found == [("IH005", 10), ("IH005", 11), ("IH005", 12), ("IH005", 13), ("IH005", 14)]


def test_python_values_periodic_logging_and_lightning_self_log_stay_quiet(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch
        import wandb

        def train(model, loader, opt, metric_logger, writer, ema, accelerator):
            for step, x in enumerate(loader):
                loss = model(x.cuda()).mean()
                loss_value = float(loss.detach())
                metric_logger.update(loss=loss_value, lr=opt.param_groups[0]["lr"])
                writer.add_scalar("loss", loss_value, step)
                wandb.log({"loss": loss_value, "step": step})
                ema.update(model)
                accelerator.log({"loss": loss}, step=step)
                if step % 100 == 0:
                    writer.add_scalar("loss_raw", loss, step)
                loss.backward()
                opt.step()

        class Lit:
            def training_step(self, batch, idx):
                loss = self.model(batch).mean()
                self.log("loss", loss)
                self.log_dict({"loss": loss})
                return loss
        """,
    )
    # only the float() of the loss itself (IH006) is a host read here
    assert found == [("IH006", 7)]


def test_an_average_helper_of_the_logged_loss_is_a_collective_every_step(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch

        def average_gradients(model):
            pass

        def train(model, loader, opt, backend):
            for x in loader:
                loss = model(x.cuda()).mean()
                loss.backward()
                average_gradients(model)
                opt.step()
                avg = backend.average_all(loss)
                mean = backend.avg_tensor(loss)
                w = torch.tensor([1.0, 2.0]).cuda()
                total = torch.mean(w)
        """,
    )
    # average_gradients is hand-written gradient averaging, needed every step: not reported
    assert found == [("IH016", 12), ("IH016", 13)]


def test_a_library_dataloader_subclass_is_read_as_a_loader(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch
        import webdataset as wds
        from torchdata.stateful_dataloader import StatefulDataLoader

        def main(ds, model, opt, streaming):
            if streaming:
                dl = wds.WebLoader(ds, batch_size=None, num_workers=4)
            else:
                dl = StatefulDataLoader(ds, batch_size=32, num_workers=4, pin_memory=True)
            for x in dl:
                loss = model(x.cuda(non_blocking=True)).mean()
                loss.backward()
                opt.step()
        """,
    )
    # the WebLoader pins no memory; the StatefulDataLoader sets both
    assert found == [("IH011", 7)]


def test_other_loader_wrappers_stay_quiet(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch
        from timm.data import PrefetchLoader

        def main(ds, model, opt, make_loader):
            dl = PrefetchLoader(make_loader(ds, batch_size=32))
            for x in dl:
                loss = model(x.cuda()).mean()
                loss.backward()
                opt.step()
        """,
    )
    assert found == []


LIGHTNING = """\
    import pytorch_lightning as pl
    from torch.utils.data import DataLoader

    class Data(pl.LightningDataModule):
        def train_dataloader(self):
            return DataLoader(self.train_set, batch_size=32, num_workers=8)

        def val_dataloader(self):
            return DataLoader(self.val_set, batch_size=32, num_workers=8)

    def main(args, model):
        trainer = pl.Trainer({trainer_args})
        trainer.fit(model, Data())
    """


def test_gpus_given_to_a_lightning_trainer_are_gpu_evidence(tmp_path):
    for args in ("gpus=args.gpus", "gpus=2", 'accelerator="gpu", devices=1', 'accelerator="cuda"'):
        found = _found(tmp_path, LIGHTNING.format(trainer_args=args))
        # the training loader pins no memory; the validation one is not the training loader
        assert found == [("IH011", 6)], args


def test_gpus_read_from_a_config_are_gpu_evidence_in_a_lightning_file(tmp_path):
    src = LIGHTNING.format(trainer_args="**cfg") + '    cfg = {"gpus": args.devices}\n'
    assert _found(tmp_path, src) == [("IH011", 6)]


def test_a_lightning_trainer_on_the_cpu_is_no_gpu_evidence(tmp_path):
    for args in ('accelerator="cpu"', "gpus=0", "gpus=None", "max_epochs=3"):
        assert _found(tmp_path, LIGHTNING.format(trainer_args=args)) == [], args


def test_a_gpus_option_outside_a_lightning_file_is_no_gpu_evidence(tmp_path):
    found = _found(
        tmp_path,
        """\
        import argparse
        from torch.utils.data import DataLoader

        def main(ds, model, opt):
            args = argparse.ArgumentParser().parse_args()
            print("gpus", args.gpus)
            for x in DataLoader(ds, batch_size=32, num_workers=4):
                model(x).mean().backward()
                opt.step()
        """,
    )
    assert found == []


TRAIN = """\
for x, y in loader:
    loss = criterion(model(x.cuda()), y.cuda())
    loss.backward()
    opt.step()
"""


def test_a_timm_model_trained_on_the_gpu_is_a_convolution(tmp_path):
    for head in ("import timm\n", "from timm import create_model as build\n"):
        make = "timm.create_model" if head == "import timm\n" else "build"
        src = head + f'model = {make}("resnet50d", pretrained=True).cuda()\n' + TRAIN
        assert _found(tmp_path, src) == [("IH015", 2)], head
        # with cudnn.benchmark set, nothing to report
        assert _found(tmp_path, src + "import torch\ntorch.backends.cudnn.benchmark = True\n") == [], head


def test_a_create_model_not_from_timm_is_no_convolution(tmp_path):
    src = """\
        from mylib import create_model

        model = create_model("gpt2-small").cuda()
        """
    assert _found(tmp_path, textwrap.dedent(src) + TRAIN) == []


def test_a_timm_model_in_a_script_that_does_not_train_is_no_convolution(tmp_path):
    src = """\
        import timm
        import torch

        model = timm.create_model("resnet50d").cuda().eval()
        torch.onnx.export(model, torch.randn(1, 3, 224, 224).cuda(), "model.onnx")
        """
    assert _found(tmp_path, src) == []
