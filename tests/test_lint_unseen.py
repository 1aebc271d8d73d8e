"""Lint on the held-out labelled set (tests/scripts/lint/unseen/: realistic loops in the style of the Accelerate
examples, timm, fairseq and DDP tutorials, not the corpus the rules were written against), and one small script
per idiom of issue 32 item 13."""

import textwrap

from idlehound.lint import lint_paths
from idlehound.lint._score import score_files

from .conftest import SCRIPTS

UNSEEN = SCRIPTS / "lint" / "unseen"


def test_held_out_set_meets_its_targets():
    s = score_files(sorted(UNSEEN.glob("*.py")))
    assert s.cases >= 50 and sum(s.tp.values()) >= 20
    assert s.precision() >= 0.9 and s.recall() >= 0.8, s.wrong


def _found(tmp_path, source):
    f = tmp_path / "t.py"
    f.write_text(textwrap.dedent(source))
    return sorted((x.rule, x.line) for x in lint_paths([f]))


ACCEL = """\
    import torch
    from accelerate import Accelerator
    accelerator = Accelerator()
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters())
    train_loader = torch.utils.data.DataLoader(torch.randn(64, 4), batch_size=8, num_workers=2, pin_memory=True)
    val_loader = torch.utils.data.DataLoader(torch.randn(64, 4), batch_size=8)
    model, opt, train_loader, val_loader = accelerator.prepare(model, opt, train_loader, val_loader)
    FMT = "loss %s"
    for x in train_loader:
        x = x.to(accelerator.device)
        loss = model(x).sum()
        accelerator.backward(loss)
        opt.step()
        print(loss.item())
        stats = (loss, x.mean())
        print(FMT % (loss,))
        print(("%s" + " %g") % stats)
        print(*stats)
        accelerator.gather(loss)
        accelerator.wait_for_everyone()
    for x in val_loader:
        print(model(x).sum().item())
"""


def test_an_accelerate_loop_is_a_gpu_training_loop_and_its_per_step_reads_and_waits_are_found(tmp_path):
    found = _found(tmp_path, ACCEL)
    assert ("IH001", 15) in found  # print(loss.item()) after accelerator.backward: no cuda word anywhere
    assert [line for rule, line in found if rule == "IH005"] == [17, 18, 19]  # FMT %, ("a"+"b") %, print(*t)
    assert [line for rule, line in found if rule == "IH016"] == [20, 21]  # gather, wait_for_everyone


def test_accelerate_prepared_loaders_are_not_told_to_pin_and_their_batches_not_to_copy_async(tmp_path):
    found = _found(tmp_path, ACCEL)
    assert not [f for f in found if f[0] in ("IH011", "IH012")]  # Accelerate moves the batches itself
    assert ("IH010", 7) not in found  # the validation loader beside the training one
    assert not [f for f in found if f[1] == 23]  # the evaluation loop is no training loop


def test_the_same_loader_without_accelerate_is_still_told_to_pin(tmp_path):
    plain = ACCEL.replace("model, opt, train_loader, val_loader = accelerator.prepare(", "print(")
    plain = plain.replace("pin_memory=True", "pin_memory=False").replace(
        "accelerator.backward(loss)", "loss.backward()"
    )
    found = _found(tmp_path, plain.replace("x.to(accelerator.device)", "x.to('cuda')"))
    assert ("IH011", 6) in found and ("IH010", 7) not in found


def test_an_int_modulo_and_a_periodic_gather_are_not_formatting_or_per_step(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch
        import torch.distributed as dist
        model = torch.nn.Linear(4, 1).cuda()
        opt = torch.optim.SGD(model.parameters())
        N = 10
        for i in range(100):
            loss = model(torch.randn(2, 4, device="cuda")).sum()
            loss.backward()
            opt.step()
            k = i % N
            if i % 50 == 0:
                dist.barrier()
        """,
    )
    assert found == []
