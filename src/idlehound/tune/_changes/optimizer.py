"""The optimizer family: the fused (CUDA) or foreach implementation of Adam, AdamW and SGD."""

from __future__ import annotations

from typing import Any

from .._recorder import Recorder
from .._source import SourceEdits, calls, rewrite_call
from ._base import Change, change

FUSED_OPTIMIZERS = ("Adam", "AdamW", "SGD")  # torch.optim classes that take fused=True (CUDA)


@change("fused_optimizer", order=130)
class FusedOptimizer(Change):
    def inject(self, value: Any, rec: Recorder) -> None:
        fused_optimizers()

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        if facts.get("optimizer") not in (None, *FUSED_OPTIMIZERS):
            return f"its optimizer ({facts.get('optimizer')}) is not Adam, AdamW or SGD"
        return (
            "the script's optimizer is fused or foreach already"
            if facts.get("optimizer_fused_or_foreach")
            else ""
        )

    def edit(self, value: Any, src: SourceEdits) -> None:
        for c in calls(src.tree, FUSED_OPTIMIZERS):
            if not any(k.arg in ("fused", "foreach") for k in c.keywords):
                src.edits.append(rewrite_call(src.source, c, {"fused": True}))


def fused_optimizers() -> None:
    """fused=True (on CUDA) or foreach=True where the script builds one of FUSED_OPTIMIZERS and says neither."""
    import torch

    cuda = torch.cuda.is_available()
    for name in FUSED_OPTIMIZERS:
        cls = getattr(torch.optim, name)
        original = cls.__init__

        def __init__(self: Any, *args: Any, __orig: Any = original, **kwargs: Any) -> None:
            if "fused" not in kwargs and "foreach" not in kwargs:
                kwargs["fused" if cuda else "foreach"] = True
            __orig(self, *args, **kwargs)

        cls.__init__ = __init__
