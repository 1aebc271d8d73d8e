"""Command-line options off by default: `if self.opts.lpips_lambda_crop > 0:` where the project declares
`parser.add_argument('--lpips_lambda_crop', default=0, ...)` is a branch a run takes only when someone sets the
option above zero (a loss term weighted 0 is not in the default objective). Its syncs are not reported as per-step
code (say less when unsure: the default run never pays them)."""

from __future__ import annotations

import ast
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Optional

from ._syntax import const, dotted, if_tests, kw
from ._view import MAX_CONTEXT_BYTES, _project_sources, _read, project_root

_DECLARED = (
    "declared:"  # a key of the declarations table: the option has an `add_argument` (not only a default)
)
# a default not of the kind asked for (a number; _atdefault: a literal), or a value set in code
_OTHER = object()


def _number(v: ast.expr) -> object:
    """An int or float constant (not a bool), else _OTHER."""
    return v.value if isinstance(v, ast.Constant) and type(v.value) in (int, float) else _OTHER


def off_options(
    files: dict[Path, ast.Module], trees: dict[Path, ast.Module], search: bool = True
) -> tuple[frozenset[str], frozenset[str]]:
    """Options read in the linted `files` whose every declaration (`add_argument('--x', ...)`, in the files read
    or, with `search`, any .py file of the project holding `--x`) has the same numeric default, that nothing sets
    another default for (`set_defaults(x=1)`) and no code assigns: those tested `> 0` and declared 0 (off by
    default), and those dividing a `%` test and declared 1 (`step % args.accumulation_steps`: every step)."""
    tested = {name for t in files.values() for name in _tested_names(t)}
    if not tested:
        return frozenset(), frozenset()
    known = declared_values(files, trees, tested, search)
    zero = frozenset(n for n, vs in known.items() if all(type(v) in (int, float) and v == 0 for v in vs))
    one = frozenset(n for n, vs in known.items() if all(type(v) is int and v == 1 for v in vs))
    return zero, one


def declared_values(
    files: dict[Path, ast.Module],
    trees: dict[Path, ast.Module],
    names: set[str],
    search: bool,
    value: Callable[[ast.expr], object] = _number,
    default: Optional[Callable[[ast.Call], object]] = None,
) -> dict[str, list[object]]:
    """Each option of `names` that an `add_argument('--x', ...)` declares (in the files read or, with `search`, any
    .py file of the project holding `--x`) -> what its declarations, `set_defaults` and code assignments give it,
    as `value` reads a default (else _OTHER); `default` reads an `add_argument` call in place of `_default`."""
    decls: dict[str, list[object]] = {}
    for t in trees.values():
        _declarations(t, names, decls, value, default)
    if search:
        for root in sorted({project_root(k.parent) for k in files}):
            for t in _mentioning_any(root, names, set(trees)):
                _declarations(t, names, decls, value, default)
    return {n: vs for n, vs in decls.items() if _DECLARED + n in decls and not n.startswith(_DECLARED)}


def modulo_option(test: ast.expr) -> list[str]:
    """The options every `%` of the test divides by (`(step + 1) % args.accumulation_steps == 0`); [] when a
    `%` divides by something else."""
    mods = [n for n in ast.walk(test) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)]
    names = [_option_attr(m.right) for m in mods]
    # `epoch % args.val_frequency`: every epoch, not every step
    epochs = any(
        "epoch" in dotted(n).lower() for m in mods for n in ast.walk(m.left) if isinstance(n, ast.Name)
    )
    return names if mods and all(names) and not epochs else []


def _option_attr(e: ast.expr) -> str:
    if not isinstance(e, ast.Attribute):
        return ""
    recv = dotted(e.value)
    return e.attr if recv and recv != "self" else ""


def option_name(test: ast.expr) -> str:
    """The option a branch test reads when it holds only with the option set above zero: `args.x > 0`,
    `args.x != 0` (a dotted receiver other than a bare `self`). A plain flag (`if args.verbose:`) is not
    followed: whether a run turns it on is the user's call, and its syncs are still reported."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return ""
    right, op = test.comparators[0], test.ops[0]
    if not (_is_zero(right) and isinstance(op, (ast.Gt, ast.NotEq))):
        return ""
    return _option_attr(test.left)


def _tested_names(tree: ast.Module) -> set[str]:
    out = set()
    for test, parts in if_tests(tree):
        out |= {option_name(p) for p in parts} | set(modulo_option(test))
    out.discard("")
    return out


def _declarations(
    tree: ast.Module,
    names: set[str],
    out: dict[str, list[object]],
    value: Callable[[ast.expr], object] = _number,
    default: Optional[Callable[[ast.Call], object]] = None,
) -> None:
    """Each declaration's default of an option in `names` (`value` of it: by default a number, else _OTHER; or
    what `default` reads of the `add_argument` call). An assignment to it in code (`opts.x = 4`, `args.x =
    args.y`) counts as _OTHER: something else sets it."""
    for node in (n for n in ast.walk(tree) if isinstance(n, ast.Assign)):
        for t in node.targets:
            if isinstance(t, ast.Attribute) and t.attr in names and dotted(t.value) not in ("", "self"):
                out.setdefault(t.attr, []).append(_OTHER)
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
        if method == "set_defaults":
            for k in call.keywords:
                if k.arg in names:
                    out.setdefault(k.arg, []).append(value(k.value))
        if method != "add_argument":
            continue
        name = _dest(call)
        if name in names:
            out.setdefault(name, []).append(default(call) if default else _default(call, value))
            out.setdefault(_DECLARED + name, []).append(True)


def _dest(call: ast.Call) -> str:
    dest = kw(call, "dest")
    if dest is not None:
        return str(const(dest) or "")
    flags = [str(a.value) for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    long = [f for f in flags if f.startswith("--")]
    return long[0][2:].replace("-", "_") if long else ""


def _default(call: ast.Call, value: Callable[[ast.expr], object]) -> object:
    """An option's default as `value` reads it (a number: a loss weight, a count): not required, not an action;
    else _OTHER."""
    if kw(call, "required") is not None and const(kw(call, "required")) is not False:
        return _OTHER
    default = kw(call, "default")
    return value(default) if kw(call, "action") is None and default is not None else _OTHER


def _is_zero(v: ast.expr) -> bool:
    """0 or 0.0 (not False)."""
    return isinstance(v, ast.Constant) and type(v.value) in (int, float) and v.value == 0


def _mentioning_any(root: Path, names: set[str], skip: set[Path]) -> list[ast.Module]:
    """The project's parsed .py files whose text declares any of these options (`--name`)."""
    words = [f"--{n}".encode() for n in names] + [f"--{n.replace('_', '-')}".encode() for n in names]
    out = []
    for p in _project_sources(root):
        if p in skip:
            continue
        text = _bytes(p)
        if text is None or b"add_argument" not in text or not any(w in text for w in words):
            continue
        parsed = _read(p)
        if parsed is not None:
            out.append(parsed[1])
    return out


def _bytes(p: Path) -> Optional[bytes]:
    try:
        st = p.stat()  # a regular file only: opening a FIFO named x.py would block
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_CONTEXT_BYTES:
            return None
        return p.read_bytes()
    except OSError:
        return None
