"""Branch tests that hold only now and then (a flag computed from `step % N`, a timer that resets itself) and
`% N` tests that hold every step (N a module constant of 1): what decides whether a branch is per-step code."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

from ._checks import _periodic
from ._syntax import dotted, own_nodes

if TYPE_CHECKING:
    from ._model import Scope


def periodic_flag(test: ast.expr, scope: Scope, depth: int = 0) -> bool:
    """`if is_metric_step:` where every binding of the name in its function is itself periodic
    (`is_metric_step = (i % metric_every == 0) or is_console_step`, `is_console_step = i % 100 == 0`)."""
    if depth > 3:
        return False
    if _periodic(test):
        return True
    names = [n.id for n in ast.walk(test) if isinstance(n, ast.Name)]
    for name in names:
        bound = scope.values.get(name, [])
        if name in scope.fixed or not bound:
            continue
        if all(index is None and periodic_flag(value, scope, depth + 1) for value, index in bound):
            return True
    return False


def every_step_mod(test: ast.expr, scope: Scope) -> bool:
    """`iter_num % log_interval == 0` with `log_interval = 1` at module level (and nowhere else): every `%` of the
    test divides by one, so the branch runs every step."""
    mods = [
        n
        for n in ast.walk(test)
        if isinstance(n, ast.BinOp)
        and isinstance(n.op, ast.Mod)
        and not isinstance(n.left, (ast.Constant, ast.JoinedStr))
    ]
    return bool(mods) and all(_one(m.right, scope) for m in mods)


def _one(e: ast.expr, scope: Scope) -> bool:
    if isinstance(e, ast.Constant):
        return type(e.value) is int and e.value == 1
    if not isinstance(e, ast.Name):
        return False
    s: Optional[Scope] = scope
    while s is not None:  # the nearest scope that binds the name decides
        if e.id in s.fixed:
            return False
        bound = s.values.get(e.id)
        if bound:
            if isinstance(s.node, ast.Module) and _execs(s.node):
                return False  # `exec(open("configurator.py").read())` may rebind any module constant
            return all(
                index is None and isinstance(v, ast.Constant) and type(v.value) is int and v.value == 1
                for v, index in bound
            )
        s = s.parent
    return False


def _execs(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.Call) and dotted(n.func) == "exec" for n in ast.walk(tree))


def throttled(node: ast.If) -> bool:
    """`if now - last_logging > args.log_freq_time: ...; last_logging = now`: the branch resets the time it is
    measured from, so it runs once per interval, not every step."""
    reset = {
        dotted(t)
        for st in node.body
        if isinstance(st, (ast.Assign, ast.AnnAssign))
        for t in (st.targets if isinstance(st, ast.Assign) else [st.target])
    }
    for cmp in (n for n in ast.walk(node.test) if isinstance(n, ast.Compare)):
        if len(cmp.ops) != 1 or not isinstance(cmp.ops[0], (ast.Gt, ast.GtE)):
            continue
        diff = cmp.left
        if (
            isinstance(diff, ast.BinOp)
            and isinstance(diff.op, ast.Sub)
            and dotted(diff.right) in reset - {""}
        ):
            return True
    return False


def last_batch(test: ast.expr) -> bool:
    """`if i == len(trainloader) - 1:` (or `== len(loader)`): the last batch of a pass, once per epoch."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    return any(_len_of(side) for side in (test.left, test.comparators[0]))


def _len_of(e: ast.expr) -> bool:
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Sub) and isinstance(e.right, ast.Constant):
        e = e.left
    return isinstance(e, ast.Call) and dotted(e.func) == "len"


def other_phase(node: ast.If, scope: Scope, cache: dict[int, list[ast.expr]]) -> tuple[bool, bool]:
    """A function shared by the training and the evaluation phase (`main_loop(phase)`) steps the optimizer only
    under `if phase == TRAIN:`: the `else` of that same test elsewhere (`elif phase == VAL:`), or an `if` that
    compares the same value with another constant (`if phase == VAL:`), runs when no step is taken. Whether this
    `if`'s body and its `else` are such a phase, as (body, orelse)."""
    if id(scope.node) not in cache:  # (per function: its body is walked once)
        cache[id(scope.node)] = _step_tests(scope)
    tests = cache[id(scope.node)]
    if not tests or _steps_in(node.body, scope):
        return False, False
    if ast.dump(node.test) in {ast.dump(t) for t in tests}:
        return False, True
    return any(_other_value(node.test, t) for t in tests), False


def _step_tests(scope: Scope) -> list[ast.expr]:
    """The tests `x == C` of this function's `if`s whose body steps the optimizer and whose `else` does not."""
    func = scope.node
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    return [
        n.test
        for n in own_nodes(func.body)
        if isinstance(n, ast.If)
        and _eq_sides(n.test) is not None  # a phase (`mode == "train"`), not `(i + 1) % accum == 0`
        and _steps_in(n.body, scope)
        and not _steps_in(n.orelse, scope)
    ]


def _steps_in(body: list[ast.stmt], scope: Scope) -> bool:
    from ._steps import is_step_call  # (_steps imports the model, which this module's callers import)

    return any(isinstance(n, ast.Call) and is_step_call(n, scope) for n in own_nodes(body))


def _other_value(test: ast.expr, step_test: ast.expr) -> bool:
    """`phase == VAL` where the step's test is `phase == TRAIN`: the same value against another constant."""
    here, step = _eq_sides(test), _eq_sides(step_test)
    return here is not None and step is not None and here[0] == step[0] and here[1] != step[1]


def _eq_sides(test: ast.expr) -> Optional[tuple[str, str]]:
    """`x == C` with C a literal or a dotted constant (`LoopPhase.VAL`, `"train"`): the dumps of both sides."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return None
    value = test.comparators[0]
    if not (isinstance(value, ast.Constant) or (isinstance(value, ast.Attribute) and dotted(value))):
        return None
    if any(isinstance(n, ast.BinOp) for n in ast.walk(test.left)):
        return None  # `(i + 1) % accum == 0`: a step count, not a phase
    return ast.dump(test.left), ast.dump(value)
