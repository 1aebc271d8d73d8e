"""Telling the user's own source files from Python's, torch's and other installed packages'."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

_LIB_MARKERS = ("site-packages", "dist-packages", "/lib/python3", "<frozen", "/idlehound/")
_OWN_PKG = str(Path(__file__).resolve().parent)
_BUILTIN_WORKLOADS = ("idlehound/workloads/", "idlehound/demo.py")


@functools.lru_cache(maxsize=1)
def _library_roots() -> frozenset[str]:
    roots = set(getattr(sys, "stdlib_module_names", ())) | {"torch", "torchvision", "idlehound", "runpy"}
    try:
        from importlib.metadata import packages_distributions

        roots |= set(packages_distributions())
    except Exception:  # older Pythons: the stdlib list and the names above still apply
        pass
    return frozenset(roots)


@functools.lru_cache(maxsize=4096)
def is_user_file(path: str) -> bool:
    """True for the user's own files; False for Python, torch and other installed packages.

    Paths may be absolute, or shortened by the profiler (site-packages and sys.path prefixes removed).
    """
    if not path or path.startswith("<"):
        return False
    if any(w in path.replace("\\", "/") for w in _BUILTIN_WORKLOADS):
        return True  # the demo's and ladder's training code stands in for the user's
    if os.path.isabs(path):
        return not (path.startswith(_OWN_PKG) or any(m in path for m in _LIB_MARKERS))
    first = path.replace("\\", "/").split("/", 1)[0]
    root = first[:-3] if first.endswith(".py") else first
    return root not in _library_roots()
