"""The registry of tune's changes, one module a family: loader (DataLoader keywords, non_blocking copies, host
threads), graphs (channels_last, CUDA graphs, torch.compile), precision (cudnn.benchmark, TF32, autocast),
optimizer (fused / foreach) and frameworks (the Trainer arguments of transformers and Lightning, Lightning's
per-step logging). Each change (a `Change` registered with `@change`) owns one settings key: its injection in
the child (_child.apply), its no-op test (_candidates.not_applicable) and its edit for the diff
(_diff.changed_source), which look it up here and never name a family. A new family is a new module here.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from ._base import CHANGES, Change, change
from .frameworks import step_prog_bar_logs
from .graphs import COMPILE_BACKEND_ENV, compile_kwargs
from .optimizer import FUSED_OPTIMIZERS

# Every module of this package but _base: each registers its changes as it is imported, so a new family is a
# new module here and nothing else.
FAMILIES = tuple(
    importlib.import_module(f"{__name__}.{m.name}")
    for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
    if not m.name.startswith("_")
)


def no_op(settings: dict[str, Any], facts: dict[str, Any]) -> str:
    """Why a variant with these settings would change nothing (the first change that says so), or ""."""
    return next(
        (
            why
            for k, ch in CHANGES.items()
            if settings.get(k)
            for why in [ch.no_op(settings[k], facts)]
            if why
        ),
        "",
    )


__all__ = [
    "CHANGES",
    "COMPILE_BACKEND_ENV",
    "FUSED_OPTIMIZERS",
    "Change",
    "change",
    "compile_kwargs",
    "no_op",
    "step_prog_bar_logs",
]
