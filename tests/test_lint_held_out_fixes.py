"""The lint fixes made after scoring the public held-out set (benchmarks/bench_lint_public.py): each idiom as it
appears there (nanoGPT's resumed step counter, DETR's summed loss dict, a Lightning Fabric loader, minGPT's
evaluation helper, Accelerate's reduce and check_trigger), with the look-alike that must still be reported."""

import textwrap

from idlehound.lint import lint_paths


def _found(tmp_path, source):
    f = tmp_path / "t.py"
    f.write_text(textwrap.dedent(source))
    return sorted((x.rule, x.line) for x in lint_paths([f]))


def test_a_counter_read_from_a_checkpoint_is_no_tensor_condition(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch
        model = torch.nn.Linear(4, 1).cuda()
        opt = torch.optim.SGD(model.parameters())
        it = 0
        checkpoint = torch.load("ckpt.pt")
        it = checkpoint["iter_num"]
        while True:
            if it % 100 == 0 and it > 0:
                print("eval")
            loss = model(torch.randn(2, 4, device="cuda")).sum()
            loss.backward()
            opt.step()
            it += 1
            if it > 1000:
                break
            if loss > 3:
                break
        """,
    )
    assert found == [("IH007", 16)]  # only the loss decides a branch


def test_item_of_a_sum_over_a_dict_of_losses_is_a_host_read(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch
        model = torch.nn.Linear(4, 1).cuda()
        opt = torch.optim.SGD(model.parameters())
        lengths = [3, 4]
        for x in range(10):
            out = model(torch.randn(2, 4, device="cuda"))
            loss_dict = {"a": out.sum(), "b": out.mean()}
            total = sum(loss_dict[k] for k in loss_dict)
            logged = sum(loss_dict.values())
            value = logged.item()
            n = sum(lengths)
            total.backward()
            opt.step()
        """,
    )
    assert found == [("IH001", 10)]


FABRIC = """\
    import torch
    from lightning.fabric import Fabric
    fabric = Fabric()
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters())
    model, opt = fabric.setup(model, opt)
    train_loader = torch.utils.data.DataLoader(torch.randn(64, 4), batch_size=8)
    train_loader = fabric.setup_dataloaders(train_loader)
    meter = torch.zeros(1).to(fabric.device)
    for x in train_loader:
        loss = model(x).sum()
        fabric.backward(loss)
        opt.step()
"""


def test_a_fabric_loader_is_not_told_to_pin_but_still_to_use_workers(tmp_path):
    assert _found(tmp_path, FABRIC) == [("IH010", 7)]
    plain = FABRIC.replace("train_loader = fabric.setup_dataloaders(train_loader)", "pass")
    assert _found(tmp_path, plain) == [("IH010", 7), ("IH011", 7)]


EVAL_ONLY = """\
    import torch
    model = torch.nn.Conv1d(4, 1, 1).cuda()
    torch.backends.cudnn.benchmark = True

    def eval_split(dataset):
        loader = torch.utils.data.DataLoader(dataset, batch_size=100, num_workers=0)
        for x in loader:
            model(x.cuda())
"""


def test_a_loader_built_in_an_evaluation_function_is_not_a_training_loader(tmp_path):
    assert _found(tmp_path, EVAL_ONLY) == []
    assert _found(tmp_path, EVAL_ONLY.replace("def eval_split", "def make_batches")) == [
        ("IH010", 6),
        ("IH011", 6),
    ]


def test_accelerate_reduce_and_check_trigger_every_step_are_collectives(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch
        from accelerate import Accelerator
        accelerator = Accelerator()
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters())
        model, opt = accelerator.prepare(model, opt)
        for step in range(100):
            loss = model(torch.randn(2, 4, device=accelerator.device)).sum()
            accelerator.backward(loss)
            opt.step()
            total = accelerator.reduce(loss.detach())
            if accelerator.check_trigger():
                break
            if step % 50 == 0:
                mean = accelerator.reduce(loss.detach(), reduction="mean")
        """,
    )
    assert [line for rule, line in found if rule == "IH016"] == [11, 12]
