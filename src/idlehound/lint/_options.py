"""Command-line options off by default: `if self.opts.lpips_lambda_crop > 0:` where the project declares
`parser.add_argument('--lpips_lambda_crop', default=0, ...)` is a branch a run takes only when someone sets the
option above zero (a loss term weighted 0 is not in the default objective). Its syncs are not reported as per-step
code (say less when unsure: the default run never pays them)."""

from __future__ import annotations

import ast
import stat
from pathlib import Path
from typing import Optional

from ._syntax import const, dotted, kw
from ._view import MAX_CONTEXT_BYTES, _project_sources, _read, project_root

_DECLARED = (
    "declared:"  # a key of the declarations table: the option has an `add_argument` (not only a default)
)


def off_options(
    files: dict[Path, ast.Module], trees: dict[Path, ast.Module], search: bool = True
) -> frozenset[str]:
    """Names tested as options in the linted `files` (`if opts.x > 0:`) whose every declaration
    (`add_argument('--x', ...)`, in the files read or, with `search`, any .py file of the project holding `--x`)
    defaults to 0, that nothing sets another default for (`set_defaults(x=1)`) and no code assigns."""
    tested = {name for t in files.values() for name in _tested_names(t)}
    if not tested:
        return frozenset()
    seen = set(trees)
    decls: dict[str, list[bool]] = {}
    for t in trees.values():
        _declarations(t, tested, decls)
    if search:
        roots = {project_root(k.parent) for k in files}
        for root in sorted(roots):
            for t in _mentioning_any(root, tested, seen):
                _declarations(t, tested, decls)
    return frozenset(n for n, offs in decls.items() if _DECLARED + n in decls and all(offs))


def option_name(test: ast.expr) -> str:
    """The option a branch test reads when it holds only with the option set above zero: `args.x > 0`,
    `args.x != 0` (a dotted receiver other than a bare `self`). A plain flag (`if args.verbose:`) is not
    followed: whether a run turns it on is the user's call, and its syncs are still reported."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return ""
    right, op = test.comparators[0], test.ops[0]
    if not (_is_zero(right) and isinstance(op, (ast.Gt, ast.NotEq))):
        return ""
    left = test.left
    if not isinstance(left, ast.Attribute):
        return ""
    recv = dotted(left.value)
    return left.attr if recv and recv != "self" else ""


def _tested_names(tree: ast.Module) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            parts = node.test.values if isinstance(node.test, ast.BoolOp) else [node.test]
            out |= {option_name(p) for p in parts}
    out.discard("")
    return out


def _declarations(tree: ast.Module, names: set[str], out: dict[str, list[bool]]) -> None:
    """For each declaration of an option in `names`: whether its default is zero. An assignment to it in code
    (`opts.x = 4`, `args.x = args.y`) vetoes: something else sets it."""
    for node in (n for n in ast.walk(tree) if isinstance(n, ast.Assign)):
        for t in node.targets:
            if isinstance(t, ast.Attribute) and t.attr in names and dotted(t.value) not in ("", "self"):
                out.setdefault(t.attr, []).append(False)
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
        if method == "set_defaults":
            for k in call.keywords:
                if k.arg in names:
                    out.setdefault(k.arg, []).append(_is_zero(k.value))
        if method != "add_argument":
            continue
        name = _dest(call)
        if name in names:
            out.setdefault(name, []).append(_off_default(call))
            out.setdefault(_DECLARED + name, []).append(True)


def _dest(call: ast.Call) -> str:
    dest = kw(call, "dest")
    if dest is not None:
        return str(const(dest) or "")
    flags = [str(a.value) for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    long = [f for f in flags if f.startswith("--")]
    return long[0][2:].replace("-", "_") if long else ""


def _off_default(call: ast.Call) -> bool:
    """A numeric option whose default is 0 (a loss weight, a count): not required, not an action."""
    if kw(call, "required") is not None and const(kw(call, "required")) is not False:
        return False
    default = kw(call, "default")
    return kw(call, "action") is None and default is not None and _is_zero(default)


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
