"""Loaders consumed where they are built: `torch.cat([d[0] for d in DataLoader(train_set)])` (a one-off pass to
compute dataset statistics at start-up) drains the loader inside one expression. No training step can run per
batch there, so its worker and pinning settings cost no GPU time."""

from __future__ import annotations

import ast


def consumed_inline(tree: ast.Module) -> set[int]:
    """The ids of the calls that are the iterable of a comprehension or generator expression."""
    return {
        id(g.iter)
        for n in ast.walk(tree)
        if isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))
        for g in n.generators
        if isinstance(g.iter, ast.Call)
    }
