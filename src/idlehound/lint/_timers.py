"""A timer object reset by the branch it gates: `eval_delta = gather(countdown.elapsed())`, then
`if eval_delta > every_seconds: ...; countdown.reset()`. The branch runs once per interval, not every step (the
object form of `_gates.throttled`, which reads `now - last > freq; last = now`)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ._syntax import dotted, own_nodes

if TYPE_CHECKING:
    from ._model import Scope

_ELAPSED = ("elapsed", "elapsed_time", "time_since")
_RESET = ("reset", "restart")


def timer_reset(node: ast.If, scope: Scope) -> bool:
    """The test compares (`>`, `>=`) a value read from `T.elapsed()` (in the test, or bound to a name it uses in
    this function), and the branch body calls `T.reset()`."""
    timers: set[str] = set()
    for cmp in (n for n in ast.walk(node.test) if isinstance(n, ast.Compare)):
        if not any(isinstance(op, (ast.Gt, ast.GtE)) for op in cmp.ops):
            continue
        sources: list[ast.AST] = [cmp.left]
        for name in (n.id for n in ast.walk(cmp.left) if isinstance(n, ast.Name)):
            sources += [v for v, _ in scope.values.get(name, [])]
        timers |= {_elapsed_of(c) for s in sources for c in ast.walk(s) if isinstance(c, ast.Call)}
    timers.discard("")
    return bool(timers) and any(
        isinstance(c, ast.Call)
        and isinstance(c.func, ast.Attribute)
        and c.func.attr in _RESET
        and dotted(c.func.value) in timers
        for c in own_nodes(node.body)
    )


def _elapsed_of(call: ast.Call) -> str:
    f = call.func
    return dotted(f.value) if isinstance(f, ast.Attribute) and f.attr in _ELAPSED else ""
