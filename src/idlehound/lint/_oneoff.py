"""Loaders consumed where they are built: `torch.cat([d[0] for d in DataLoader(train_set)])` (a one-off pass to
compute dataset statistics at start-up) drains the loader inside one expression. No training step can run per
batch there, so its worker and pinning settings cost no GPU time. Also: `cudnn.benchmark` set in a tuple assignment."""

from __future__ import annotations

import ast

from ._syntax import dotted


def consumed_inline(tree: ast.Module) -> set[int]:
    """The ids of the calls that are the iterable of a list, set or dict comprehension (built at once; not a
    generator expression, which may be handed on as the training loader: `return (x for x in DataLoader(...))`)."""
    return {
        id(g.iter)
        for n in ast.walk(tree)
        if isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp))
        for g in n.generators
        if isinstance(g.iter, ast.Call)
    }


def tuple_sets_benchmark(n: ast.AST) -> bool:
    """`cudnn.benchmark, cudnn.deterministic = True, False` (yolov5/yolov7's `init_seeds`): the element assigned
    to `cudnn.benchmark` is not a literal False."""
    if not isinstance(n, ast.Assign) or not isinstance(n.value, ast.Tuple):
        return False
    for t in n.targets:
        if isinstance(t, ast.Tuple) and len(t.elts) == len(n.value.elts):
            for target, value in zip(t.elts, n.value.elts):
                if dotted(target).endswith("cudnn.benchmark") and not (
                    isinstance(value, ast.Constant) and value.value is False
                ):
                    return True
    return False
