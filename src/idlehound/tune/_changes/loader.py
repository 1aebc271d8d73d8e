"""The loader family: DataLoader keywords (workers, pinned memory, prefetch), non_blocking copies of its
batches, and the training process's intra-op threads (which compete with the workers for cores)."""

from __future__ import annotations

import ast
import weakref
from typing import Any, Callable

from .._recorder import Recorder
from .._source import SourceEdits, calls, keywords_edit, rewrite_call
from ._base import Change, change


@change("loader", order=10)
class Loader(Change):
    """DataLoader keywords (workers, persistent, pinned, prefetch), set where the script builds its loaders."""

    def inject(self, value: Any, rec: Recorder) -> None:
        rec.overrides["loader"] = dict(value)  # applied by the child's DataLoader watcher

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        if facts.get("transformers_args") is not None:
            return "the transformers Trainer builds the loaders: hf_workers sets them"
        return ""

    def edit(self, value: Any, src: SourceEdits) -> None:
        loader = dict(value)
        if src.settings.get("cuda_graphs"):
            loader["drop_last"] = True  # a short last batch could not replay the recorded shapes
        keywords_edit(src, ("DataLoader",), "DataLoader", loader)


@change("non_blocking", order=20)
class NonBlocking(Change):
    """non_blocking=True on the copies of pinned loader batches to the GPU."""

    def inject(self, value: Any, rec: Recorder) -> None:
        async_batch_copies()

    def edit(self, value: Any, src: SourceEdits) -> None:
        copies = _batch_copies(src.tree)
        src.edits += [rewrite_call(src.source, c, {"non_blocking": True}) for c in copies]
        if not copies:
            src.snippets.append(
                "inputs = inputs.to(device, non_blocking=True)   # each batch tensor from the loader"
            )


@change("threads", order=140)
class HostThreads(Change):
    def inject(self, value: Any, rec: Recorder) -> None:
        import torch

        torch.set_num_threads(int(value))

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        return (
            f"the training process runs {value} intra-op threads already"
            if facts.get("threads") == value
            else ""
        )

    def edit(self, value: Any, src: SourceEdits) -> None:
        src.header.append(f"torch.set_num_threads({int(value)})")


def async_batch_copies() -> None:
    """Copy pinned DataLoader batches to the GPU with non_blocking=True when the script did not say.

    Safe for these tensors only: the loader hands out fresh pinned buffers and never writes them again, so the
    host need not wait for the copy. Other tensors keep the script's own choice.
    """
    import torch
    from torch.utils.data import dataloader as dl

    batch: dict[int, Any] = {}  # id -> weakref; not a WeakSet, whose lookups would call Tensor.__eq__
    original_next = dl._BaseDataLoaderIter.__next__

    def __next__(it: Any) -> Any:
        out = original_next(it)
        _collect_pinned(out, batch)
        return out

    def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            ref = batch.get(id(self))
            if (
                ref is not None
                and ref() is self
                and "non_blocking" not in kwargs
                and not any(isinstance(a, bool) for a in args)
            ):
                kwargs["non_blocking"] = True
            return method(self, *args, **kwargs)

        return call

    dl._BaseDataLoaderIter.__next__ = __next__
    torch.Tensor.to = wrap(torch.Tensor.to)
    torch.Tensor.cuda = wrap(torch.Tensor.cuda)


def _collect_pinned(obj: Any, into: dict[int, Any], depth: int = 0) -> None:
    import torch

    if isinstance(obj, torch.Tensor):
        if obj.is_pinned():
            key = id(obj)
            into[key] = weakref.ref(obj, lambda _, key=key: into.pop(key, None))  # type: ignore[misc]
    elif depth < 3 and isinstance(obj, (list, tuple)):
        for x in obj:
            _collect_pinned(x, into, depth + 1)
    elif depth < 3 and isinstance(obj, dict):
        for x in obj.values():
            _collect_pinned(x, into, depth + 1)


def _batch_copies(tree: ast.AST) -> list[ast.Call]:
    """`x.to(...)` / `x.cuda(...)` calls on a name that a for loop binds (the batch), without non_blocking."""
    bound = {
        n.id
        for loop in ast.walk(tree)
        if isinstance(loop, ast.For)
        for n in ast.walk(loop.target)
        if isinstance(n, ast.Name)
    }
    return [
        c
        for c in calls(tree, ("to", "cuda"))
        if isinstance(c.func, ast.Attribute)
        and isinstance(c.func.value, ast.Name)
        and c.func.value.id in bound
        and not any(k.arg == "non_blocking" for k in c.keywords)
    ]
