"""Switches off by default: `if args.perform_rl_step:` where every declaration of the option in the project is
`add_argument('--perform-rl-step', action='store_true')` (or `default=None`/`False`), that `set_defaults` does
not turn on and no code assigns. The branch runs only in a run that passes the switch, so its syncs are not
per-step code of the default run (as `args.x > 0` declared 0, _options.py, and `args.x == v`, _atdefault.py).
A switch declared on (`store_false`, `default=True`), anywhere assigned, or passed by a documented command (the
README's `python tools/train.py ... --fuse_ab`) is still followed: the documented run takes its branch."""

from __future__ import annotations

import ast
import itertools
import os
import re
from collections.abc import Iterator
from pathlib import Path

from ._atdefault import _option
from ._options import _OTHER, _bytes, declared_values
from ._syntax import conjuncts, const, if_tests, kw
from ._view import project_root

# the key under which an option's switch default sits in Functions.option_defaults (beside _atdefault's literals)
FLAG = "flag:"
_DOC_SUFFIXES = (".md", ".rst", ".sh")
_MAX_DOCS = 2000


def flag_defaults(
    files: dict[Path, ast.Module], trees: dict[Path, ast.Module], search: bool = True
) -> dict[str, object]:
    """The options tested bare in the linted `files` (`if args.x:`, `if self.args.x and ...:`) whose every
    declaration leaves them off: `FLAG + name` -> False."""
    tested = {name for t in files.values() for name in _tested(t)}
    if not tested:
        return {}
    decls = declared_values(files, trees, tested, search, value=_off, default=_switch_default)
    off = {n for n, vs in decls.items() if all(v is False for v in vs)}
    if search and off:
        for root in sorted({_clone_root(project_root(k.parent)) for k in files}):
            off -= documented(root, off)
    return {FLAG + n: False for n in off}


def documented(root: Path, names: set[str]) -> set[str]:
    """The switches a documented command of the project turns on: `--x` (or `--x-y` for `x_y`) on a command line
    of its README/docs (`python train.py ... --fuse_ab`, continuation lines joined) or of a shell script at its
    root (_doc_files). A tip in prose ("you can add --use_amp true") is no command the documented run uses."""
    out: set[str] = set()
    for p in _doc_files(root):
        text = _bytes(p)
        if text is None:
            continue
        script = p.suffix == ".sh"
        for line in text.decode("utf-8", "replace").replace("\\\n", " ").splitlines():
            if script or ".py" in line or "python" in line or "torchrun" in line:
                out |= {n for n in names - out if _passes(line, n)}
    return out


def _clone_root(here: Path) -> Path:
    """The clone `here` lies in (the nearest folder above with a `.git`), whose README documents the run; else
    `here`."""
    for d in (here, *here.parents):
        if (d / ".git").exists():
            return d
    return here


def _passes(line: str, name: str) -> bool:
    return any(re.search(rf"--{re.escape(w)}(?![\w-])", line) for w in {name, name.replace("_", "-")})


def _doc_files(root: Path) -> Iterator[Path]:
    """Where a project documents its run: the Markdown, reStructuredText and shell files at its root (README.md,
    train.sh) and under its docs/ folder, at most _MAX_DOCS. An example's own folder (examples/rl/README.md,
    scripts/model_x.sh) documents a variant, not the run."""
    try:
        top = [root / f for f in sorted(os.listdir(root))]
    except OSError:  # not a folder, or unreadable: no documented command
        top = []
    # lazily: the bound also stops the walk of a large docs/ tree (a built site), not only what is read
    nested = (Path(d) / f for sub in ("docs", "doc") for d, _, fs in os.walk(root / sub) for f in sorted(fs))
    docs = (p for p in itertools.chain(top, nested) if p.name.endswith(_DOC_SUFFIXES) and p.is_file())
    yield from itertools.islice(docs, _MAX_DOCS)


def off_flag(node: ast.If, defaults: dict[str, object]) -> bool:
    """Some conjunct of the test is a bare option declared off (`args.x` with `FLAG + x` in `defaults`), and the
    branch holds no loop: a switch around a loop (`if args.do_train: for batch in loader: ...`) picks what the
    run does, and a run passes it."""
    if not any(_option(p) and FLAG + _option(p) in defaults for p in conjuncts(node.test)):
        return False
    return not any(isinstance(n, (ast.For, ast.While)) for st in node.body for n in ast.walk(st))


def _tested(tree: ast.Module) -> set[str]:
    """Options tested bare in an `if` (`if args.x:`, a part of its `and` / `or`)."""
    return {_option(p) for _, parts in if_tests(tree) for p in parts} - {""}


def _switch_default(call: ast.Call) -> object:
    required = kw(call, "required")
    if required is not None and const(required) is not False:
        return _OTHER
    action, default = kw(call, "action"), kw(call, "default")
    if action is not None and const(action) != "store_true":
        return _OTHER
    return False if default is None else _off(default)


def _off(v: ast.expr) -> object:
    return False if isinstance(v, ast.Constant) and (v.value is None or v.value is False) else _OTHER
