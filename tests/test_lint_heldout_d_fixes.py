"""The lint fixes made after scoring held-out set D (benchmarks/lint_heldout_D.tsv, issue 32): `.cpu().item()`
counted once, copies of tensors built on the host in the step (not IH012), `.to(device=...)` and
`.pin_memory().to(device)` copies, and GPU use decided per function in a library of training functions. Each idiom
is written here from scratch, with look-alikes that must stay quiet."""

import textwrap

from idlehound.lint import lint_paths

from .lint_snippets import found as _found


def test_cpu_then_item_waits_once_and_counts_once_as_ih002(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch

        def train(model, loader, opt, device):
            total = 0.0
            for x, y in loader:
                out = model(x.to(device))
                loss = torch.nn.functional.cross_entropy(out, y.to(device))
                total += loss.cpu().item()
                hits = (out.argmax(1) == y.to(device)).sum().cpu().item()
                width = loss.item()
                loss.backward()
                opt.step()
        """,
    )
    # lines 8 and 9 copy once (IH002 only); line 10's `.item()` without `.cpu()` is IH001 as before
    assert found == [("IH001", 10), ("IH002", 8), ("IH002", 9)]


def test_host_built_tensors_copied_after_a_pinned_loader_are_not_ih012(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch
        from torch.utils.data import DataLoader

        def encode(labels, device):
            batch = torch.LongTensor(len(labels), 8).fill_(0)
            return batch.to(device), torch.IntTensor([len(t) for t in labels]).to(device)

        def gather(loaders):
            images = []
            for ld in loaders:
                images.append(next(ld))
            images = torch.cat(images, 0)
            return images, [1, 2]

        def train(model, ds, opt, device):
            loader = DataLoader(ds, batch_size=8, num_workers=4, pin_memory=True)
            it = iter(loader)
            for step in range(100):
                imgs, labels = gather([it])
                img = imgs.to(device)
                text, length = encode(labels, device)
                x, y = next(it)
                x = x.to(device)
                loss = model(img, x, text).mean()
                loss.backward()
                opt.step()
        """,
    )
    # lines 6 (LongTensor, IntTensor) and 20 (torch.cat of batches) copy pageable tensors built on the host:
    # non_blocking would not overlap them; line 23 copies the loader's pinned batch
    assert found == [("IH012", 23)]


def test_to_with_a_device_keyword_and_a_pin_memory_copy_are_blocking_copies(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch
        from torch.utils.data import DataLoader

        def train(model, ds, opt, device):
            loader = DataLoader(ds, batch_size=8, num_workers=4, pin_memory=True)
            for images, masks in loader:
                images = images.to(device=device, dtype=torch.float32)
                masks = masks.to(dtype=torch.long)
                masks = masks.to(device=device, non_blocking=True)
                loss = model(images, masks).mean()
                loss.backward()
                opt.step()

        def train_unpinned(model, ds, opt, device):
            for images, c in DataLoader(ds, batch_size=8, num_workers=4):
                c = torch.as_tensor(c).pin_memory().to(device)
                images = images.to(device)
                loss = model(images, c).mean()
                loss.backward()
                opt.step()
        """,
    )
    # line 7: `device=` keyword, blocking (line 8 only changes the dtype, line 9 is non_blocking); line 16 copies
    # pinned memory whatever its loader does; line 17 copies a batch in a file with a pinned loader (IH012 is a
    # fact of the file's loaders); line 15's loader does not pin memory (IH011)
    assert found == [("IH011", 15), ("IH012", 7), ("IH012", 16), ("IH012", 17)]


def test_pin_memory_copy_is_ih012_without_any_pinned_loader(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch

        def train(model, opt, device, labels):
            for step in range(100):
                c = torch.from_numpy(labels[step]).pin_memory().to(device)
                d = torch.from_numpy(labels[step]).to(device)
                loss = model(c, d).mean()
                loss.backward()
                opt.step()
        """,
    )
    assert found == [("IH012", 5)]


_LIBRARY = """\
import torch
from torch.utils.data import DataLoader


def evaluate(net, loader, device=None):
    device = device or torch.device("cuda")
    return sum((net(x.to(device)).argmax(1) == y.to(device)).float().sum().item() for x, y in loader)


def load_data(dataset, batch_size):
    train_iter = DataLoader(dataset, batch_size, shuffle=True)
    return train_iter


def train_cpu(net, loader, loss, optimizer, num_epochs):
    for epoch in range(num_epochs):
        total = 0.0
        for X, y in loader:
            l = loss(net(X), y).sum()
            optimizer.zero_grad()
            l.backward()
            optimizer.step()
            total += l.item()


def train_small(features, labels, loss, net, optimizer_fn):
    data_iter = DataLoader(list(zip(features, labels)), 10, shuffle=True)
    opt = optimizer_fn(net.parameters())
    for X, y in data_iter:
        l = loss(net(X), y)
        opt.zero_grad()
        l.backward()
        opt.step()
        print(l.item())


def train_gpu(net, train_iter, loss, optimizer, device, num_epochs):
    net = net.to(device)
    for epoch in range(num_epochs):
        for X, y in train_iter:
            l = loss(net(X.to(device)), y.to(device))
            optimizer.zero_grad()
            l.backward()
            optimizer.step()
            print(l.item())
"""


def test_a_library_function_without_a_device_runs_on_the_cpu_in_a_gpu_file(tmp_path):
    # train_cpu and train_small have no device and no caller in the file: their loops and loader are not
    # reported; train_gpu's are, and load_data's loader (returned: its batches go to its callers' device) too
    found = _found(tmp_path, _LIBRARY)
    assert found == [("IH001", 45), ("IH010", 11), ("IH011", 11)]


def test_a_function_called_from_the_file_or_with_gpu_at_module_level_keeps_the_file_decision(tmp_path):
    called = (
        _LIBRARY
        + "\n\ndef main(net, loader, loss, opt):\n    net.cuda()\n    train_cpu(net, loader, loss, opt, 3)\n"
    )
    assert ("IH001", 23) in _found(tmp_path, called)  # train_cpu is called: its caller's model is on the GPU
    module_gpu = _LIBRARY.replace(
        "from torch.utils.data import DataLoader\n",
        "from torch.utils.data import DataLoader\nDEVICE = 'cuda'\n",
    )
    found = _found(tmp_path, module_gpu, "m.py")
    assert ("IH001", 24) in found and ("IH010", 28) in found  # a module-level device: the whole file is on it
    decorated = _LIBRARY.replace("def train_cpu(", "@entry_point\ndef train_cpu(")
    assert ("IH001", 24) in _found(tmp_path, decorated, "d.py")  # run by its decorator, with what it sets up


def test_a_helper_file_linted_with_a_gpu_importer_keeps_the_file_decision(tmp_path):
    (tmp_path / "helpers.py").write_text(_LIBRARY)
    (tmp_path / "main.py").write_text(
        "import torch\nimport helpers\n\nmodel = torch.nn.Linear(2, 2).cuda()\n"
    )
    found = sorted((x.rule, x.line) for x in lint_paths([tmp_path]) if x.file.endswith("helpers.py"))
    assert ("IH001", 23) in found and ("IH001", 34) in found


def test_pin_memory_passed_in_by_a_caller_is_unknown_not_pinned_nor_unpinned(tmp_path):
    (tmp_path / "loaders.py").write_text(
        textwrap.dedent(
            """\
            from torch.utils.data import DataLoader

            def create_loader(ds, pin_memory=False, **kwargs):
                return DataLoader(ds, batch_size=8, num_workers=4, pin_memory=pin_memory)

            def make(ds, loader_kwargs):
                return DataLoader(ds, batch_size=8, num_workers=4, **loader_kwargs)
            """
        )
    )
    train = """\
        import argparse
        import torch
        from torch.utils.data import DataLoader
        from loaders import create_loader

        def train(model, ds, opt, args):
            loader = create_loader(ds, pin_memory=args.pin_mem)
            for x, y in loader:
                x, y = x.to("cuda"), y.to("cuda")
                loss = model(x, y).mean()
                loss.backward()
                opt.step()
        """
    (tmp_path / "train.py").write_text(textwrap.dedent(train))
    assert sorted((x.rule, x.line) for x in lint_paths([tmp_path])) == []  # no IH011, no IH012: unknown
    pinned_here = train.replace(
        "loader = create_loader(ds, pin_memory=args.pin_mem)",
        "loader = DataLoader(ds, num_workers=4, pin_memory=args.pin_mem)",
    )
    (tmp_path / "train.py").write_text(textwrap.dedent(pinned_here))
    # a flag read from the command line in the training file counts as pinning (`--pin-mem` scripts)
    assert sorted((x.rule, x.line) for x in lint_paths([tmp_path])) == [("IH012", 9)]


def test_a_name_rebound_to_a_python_value_just_before_is_read_as_one(tmp_path):
    found = _found(
        tmp_path,
        """\
        import torch

        def clip(params, theta, device):
            norm = torch.zeros(1, device=device)
            for p in params:
                norm += (p.grad ** 2).sum()
            norm = norm.sqrt().item()
            if norm > theta:
                for p in params:
                    p.grad *= theta / norm

        def train(model, loader, opt, device):
            for step, (x, y) in enumerate(loader):
                loss = model(x.to(device), y.to(device))
                lossf = loss.detach()
                loss.backward()
                clip(model.parameters(), 1.0, device)
                opt.step()
                if step > 10:
                    print(f"loss {lossf}")
                lossf = lossf.item()
                print(f"loss {lossf}")
                if lossf > 3.0:
                    print("high")
        """,
    )
    # line 7 reads the GPU (IH001); line 8's `norm` and lines 22-23's `lossf` are Python values there; line 20's
    # `lossf` is still the tensor (the rebinding comes after it)
    assert found == [("IH001", 7), ("IH001", 21), ("IH005", 20)]
