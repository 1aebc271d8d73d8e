"""Branches a default run does not take: `if args.batch_chunk > 1:` where the project declares
`parser.add_argument('--batch_chunk', type=int, default=1)`, `elif opt.distill == 'abound':` where `--distill`
defaults to 'kd', `if i < args.precrop_iters:` where `--precrop_iters` defaults to 0 (no count is below zero).
The test is false with every option it compares at its declared default, so its body runs only in a run that
changes the option: its syncs are not per-step code of the default run (as `args.x > 0` declared 0, _options.py).
A plain flag (`if args.verbose:`) is still not followed: there the test names no value to compare."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

from ._options import _OTHER, declared_values
from ._syntax import conjuncts, const, dotted, if_tests

_OPS: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
}


def option_defaults(
    files: dict[Path, ast.Module], trees: dict[Path, ast.Module], search: bool = True
) -> dict[str, object]:
    """The options compared in the linted `files` (`args.x OP literal`, `count < args.x`) whose every declaration
    (`add_argument('--x', default=...)` in the files read or, with `search`, any .py file of the project holding
    `--x`) gives the same literal default (a number, not a bool, or a string), that `set_defaults` does not change
    and that no code assigns: option name -> its default."""
    compared = {name for t in files.values() for name in _compared_names(t)}
    if not compared:
        return {}
    out: dict[str, object] = {}
    for name, values in declared_values(files, trees, compared, search, _value).items():
        first = values[0]
        if first is not _OTHER and all(type(v) is type(first) and v == first for v in values):
            out[name] = first
    return out


def false_at_default(test: ast.expr, defaults: dict[str, object]) -> bool:
    """Some conjunct of the test (`a and b`) is a comparison false with its option at the declared default."""
    return any(_false(p, defaults) for p in conjuncts(test))


def _false(test: ast.expr, defaults: dict[str, object]) -> bool:
    sides = _sides(test)
    if sides is None:
        return False
    name, op, value = sides
    if name not in defaults:
        return False
    default = defaults[name]
    if value is _COUNT:  # `i < args.n` declared 0 (or less): no count is below it
        return isinstance(default, (int, float)) and default <= 0
    if type(default) is not type(value) and not (_number(default) and _number(value)):
        return False
    try:
        return not _OPS[op](default, value)
    except TypeError:
        return False


_COUNT = object()  # stands for a loop count (a plain name) on the left of `<`


def _sides(test: ast.expr) -> Optional[tuple[str, type, object]]:
    """`args.x OP literal` as (x, OP, literal); `count < args.x` as (x, Lt, _COUNT); else None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _OPS):
        return None
    left, right, op = test.left, test.comparators[0], type(test.ops[0])
    if _option(left) and _literal(right):
        return _option(left), op, const(right)
    if op is ast.Lt and isinstance(left, ast.Name) and _option(right):
        return _option(right), op, _COUNT
    return None


# what a script names its parsed command line (`args = parser.parse_args()`, `self.opt = opt`); not a model's
# `self.config.shift`, whose name may match an unrelated script's `--shift`
_PARSED = ("args", "opt", "opts", "options", "flags")


def _option(e: ast.expr) -> str:
    """`args.x`, `opt.x`, `self.opts.x`: the option's name."""
    if not isinstance(e, ast.Attribute):
        return ""
    recv = dotted(e.value).rsplit(".", 1)[-1].lower()
    return e.attr if recv in _PARSED else ""


def _literal(e: ast.expr) -> bool:
    return isinstance(e, ast.Constant) and (_number(e.value) or isinstance(e.value, str))


def _number(v: object) -> bool:
    return type(v) in (int, float)


def _compared_names(tree: ast.Module) -> set[str]:
    return {s[0] for _, parts in if_tests(tree) for s in map(_sides, parts) if s is not None}


def _value(v: ast.expr) -> object:
    return v.value if _literal(v) and isinstance(v, ast.Constant) else _OTHER


def calls_off_by_default(tree: ast.Module, defaults: dict[str, object]) -> set[int]:
    """The ids of the calls in the body of an `if` false at the defaults (`elif opt.distill == 'abound':
    init(...)`): a helper with its own loop called there (a pre-training stage) does not run by default."""
    if not defaults:
        return set()
    return {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and false_at_default(node.test, defaults)
        for st in node.body
        for n in ast.walk(st)
        if isinstance(n, ast.Call)
    }
