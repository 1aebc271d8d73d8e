"""Branch tests that hold only for some runs or some batches, read per conjunct of an `and`:
`if self.opts.use_wandb and batch_idx == 0:` logs the first batch of each pass (once per epoch), and
`if opts.l2_lambda_crop > 0:` only when an option declared with default 0 is set; and a helper's
`if isinstance(v, torch.Tensor): v = v.item()` converts only what its callers pass as tensors."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from ._checks import _first_step
from ._options import option_name
from ._syntax import conjuncts, dotted

if TYPE_CHECKING:
    from ._model import Scope

# the index of a batch within a pass: `batch_idx`, `batch_index`, `batch_i`, `i_batch`
_BATCH_INDEX = re.compile(r"^(batch_?(idx|index|id|i|num|no|nb)|i_?batch)$", re.IGNORECASE)


def rare_test(test: ast.expr, off_options: frozenset[str]) -> bool:
    """Some conjunct of the test holds only with an option off by default, or on the first batch of a pass."""
    return any(option_name(p) in off_options or _first_batch(p) for p in conjuncts(test))


def _first_batch(test: ast.expr) -> bool:
    """`batch_idx == 0` (or a step counter, as `_first_step`): the first batch of a pass only."""
    if _first_step(test):
        return True
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = (test.left, test.comparators[0])
    zero = any(isinstance(s, ast.Constant) and type(s.value) is int and s.value == 0 for s in sides)
    return zero and any(_BATCH_INDEX.match(dotted(s).rsplit(".", 1)[-1]) for s in sides)


def converts_if_tensor(test: ast.expr, scope: Scope) -> bool:
    """`if isinstance(v, torch.Tensor): v = v.item()` (or `torch.is_tensor(v)`) on a value not known to be a tensor,
    in a metric logger's own method (`MetricLogger.update(**kwargs)`, `MetricMeter.update(d)`: a class named
    `*Logger`, `*Meter`, `*Writer`, `*Tracker`). What it converts is what its callers pass; a caller passing a
    tensor is reported at its call (IH005), as for a logger lint does not read."""
    if not (isinstance(test, ast.Call) and test.args and _logger_method(scope)):
        return False
    name = dotted(test.func)
    typed = name == "isinstance" and len(test.args) == 2 and dotted(test.args[1]).endswith("Tensor")
    if not (typed or name in ("torch.is_tensor", "is_tensor")):
        return False
    return scope.kind(test.args[0]) != "tensor"


def _logger_method(scope: Scope) -> bool:
    node = scope.node
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    owners = [c for c, methods in scope.funcs.classes.items() if methods.get(node.name) is node]
    return any(c.endswith(("Logger", "Meter", "Writer", "Tracker")) for c in owners)
