"""Scripts that run on the CPU unless told otherwise: `parser.add_argument("--device", default="cpu")` with no
`.cuda()` and no `"cuda"` device named in the file. The GPU is an option of such a script; its default run has
no GPU to keep busy, so its syncs and loaders are not reported (say less when unsure)."""

from __future__ import annotations

import ast

from ._syntax import const, kw


def cpu_by_default(tree: ast.Module) -> bool:
    declared = False
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr == "cuda":
                return False  # `model.cuda()`: the GPU whatever the option says
            if n.func.attr == "add_argument" and "--device" in [const(a) for a in n.args]:
                declared = declared or const(kw(n, "default")) == "cpu"
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("cuda"):
            return False
    return declared
