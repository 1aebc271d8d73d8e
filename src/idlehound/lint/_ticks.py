"""Work done once per tick: `if cur_nimg < tick_start_nimg + kimg_per_tick * 1000: continue` at the top level of
a training loop, with `tick_start_nimg = cur_nimg` further down. Everything after that `continue` runs once per
interval (StyleGAN's maintenance: status line, snapshots), like a timer that resets itself. Likewise after
`if total_steps % self.checkpoint_every: return` (or `continue`): the rest runs once every N steps."""

from __future__ import annotations

import ast
from typing import Optional

from ._syntax import dotted


def tick_gate(body: list[ast.stmt]) -> Optional[int]:
    """The index of the first statement after `if ...: continue` whose test compares (`<`, `<=`) against a name
    the statements after it rebind; None when there is none."""
    for i, st in enumerate(body):
        if not (
            isinstance(st, ast.If)
            and len(st.body) == 1
            and isinstance(st.body[0], (ast.Continue, ast.Return))
        ):
            continue
        if _skips_unless_multiple(st.test):
            return i + 1
        if not isinstance(st.body[0], ast.Continue):
            continue
        later = {
            dotted(t)
            for s in body[i + 1 :]
            for n in ast.walk(s)
            if isinstance(n, ast.Assign)
            for t in n.targets
        }
        later.discard("")
        for cmp in (n for n in ast.walk(st.test) if isinstance(n, ast.Compare)):
            if any(isinstance(op, (ast.Lt, ast.LtE)) for op in cmp.ops):
                names = {dotted(n) for side in [cmp.left, *cmp.comparators] for n in ast.walk(side)}
                if names & later:
                    return i + 1
    return None


def _skips_unless_multiple(test: ast.expr) -> bool:
    """`if step % n:` / `if step % n != 0:`: true on every step but each n-th."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotEq):
        right = test.comparators[0]
        if isinstance(right, ast.Constant) and right.value == 0:
            test = test.left
    return isinstance(test, ast.BinOp) and isinstance(test.op, ast.Mod)
