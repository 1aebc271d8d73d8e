"""Build a script's DataLoaders on the branch it takes with an accelerator (or without one), on any machine.

A loader edit can sit under `if use_accel:` or in a `{...} if use_accel else {}` dict: running the changed
script on this machine checks one branch only. Here the script runs with torch's accelerator forced on (or
off), its device kept on the CPU, and stops when it first iterates a loader (or ends); every DataLoader it
built by then was built with the keywords that branch passes. An error raised by a DataLoader call (a keyword
passed twice, prefetch_factor without workers) is what breaks; an error elsewhere (a CUDA-only call the forced
accelerator cannot run, a missing data set) only ends the check early.

    python -m idlehound.tune._branches OUT.json accel|cpu SCRIPT [ARGS...]
"""

from __future__ import annotations

import ast
import json
import runpy
import sys
import traceback
from pathlib import Path
from typing import Any, NoReturn

from ..errors import caused_by
from ..settings import TUNE_SCRIPT_DIR


class _Iterated(BaseException):
    """The script started iterating a loader: the loaders of this branch are built.

    A BaseException, as KeyboardInterrupt is, so that a framework's `except Exception` around its own iter()
    (Lightning's CombinedLoader) lets it through rather than failing later with an error of its own."""


def loader_lines(source: str) -> set[int]:
    """The lines that a DataLoader(...) call spans."""
    out: set[int] = set()
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name == "DataLoader":
                out.update(range(n.lineno, (n.end_lineno or n.lineno) + 1))
    return out


def _saying(value: Any, original: Any) -> Any:
    def said(*a: Any, **k: Any) -> Any:
        return value

    said.__wrapped__ = original  # type: ignore[attr-defined]  # torch reads it (functools.wraps style)
    return said


def force_branch(accel: bool) -> None:
    """torch says an accelerator is (or is not) there; the device it names stays the CPU."""
    import torch

    torch.cuda.is_available = _saying(accel, torch.cuda.is_available)
    if hasattr(torch, "accelerator"):
        acc = torch.accelerator
        acc.is_available = _saying(accel, acc.is_available)
        acc.current_accelerator = _saying(torch.device("cpu") if accel else None, acc.current_accelerator)
    if hasattr(torch.backends, "mps"):
        torch.backends.mps.is_available = _saying(False, torch.backends.mps.is_available)


def _watch_loaders(built: list[dict[str, Any]]) -> None:
    import torch.utils.data as tud

    cls = tud.DataLoader
    init, iterate = cls.__init__, cls.__iter__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        built.append({k: kwargs[k] for k in sorted(kwargs) if k in _KEYS})

    def __iter__(self: Any) -> NoReturn:
        raise _Iterated

    cls.__init__ = __init__
    cls.__iter__ = __iter__
    _ = iterate


_KEYS = ("num_workers", "pin_memory", "prefetch_factor", "persistent_workers")


def _where(e: BaseException, script: str) -> int:
    """The script's line in the innermost frame of the script in e's traceback (0 when none)."""
    line = 0
    for fr in traceback.extract_tb(e.__traceback__):
        if Path(fr.filename).resolve() == Path(script).resolve():
            line = fr.lineno or 0
    return line


def check(script: str, args: list[str], accel: bool) -> dict[str, Any]:
    """{"built": [keywords of each loader built], "broken": "" or the loader call's error, "stopped": why}."""
    force_branch(accel)
    built: list[dict[str, Any]] = []
    _watch_loaders(built)
    lines = loader_lines(Path(script).read_text(encoding="utf-8"))
    sys.argv = [script, *args]
    sys.path.insert(0, TUNE_SCRIPT_DIR.get() or str(Path(script).resolve().parent))
    out: dict[str, Any] = {"branch": "accel" if accel else "cpu", "built": built, "broken": "", "stopped": ""}
    try:
        runpy.run_path(script, run_name="__main__")
        out["stopped"] = "ended"
    except _Iterated:
        out["stopped"] = "first loader iterated"
    except SystemExit as e:
        out["stopped"] = f"exit {e.code}"
    except BaseException as e:  # noqa: BLE001 - the script's own error is the finding
        if caused_by(e, _Iterated):
            out["stopped"] = "first loader iterated"
            return out
        line = _where(e, script)
        what = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        in_loader = (
            line in lines
            or "DataLoader" in str(e)
            or any(
                fr.name == "__init__" and "dataloader" in fr.filename
                for fr in traceback.extract_tb(e.__traceback__)
            )
        )
        if in_loader:
            out["broken"] = f"line {line}: {what}"
        else:
            out["stopped"] = f"line {line}: {what}"
    return out


def main() -> None:
    out, branch, script, *args = sys.argv[1:]
    result = check(script, args, branch == "accel")
    Path(out).write_text(json.dumps(result, default=repr), encoding="utf-8")


if __name__ == "__main__":
    main()
