"""Telling the user's own source files from Python's, torch's and other installed packages'."""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from pathlib import Path

_LIB_MARKERS = ("site-packages", "dist-packages", "/lib/python3", "<frozen", "/idlehound/")
_OWN_PKG = str(Path(__file__).resolve().parent)
_BUILTIN_WORKLOADS = ("idlehound/workloads/", "idlehound/demo.py")


_ALWAYS_LIBRARY = frozenset({"torch", "torchvision", "idlehound", "runpy"})


@functools.lru_cache(maxsize=1024)
def _is_library_root(root: str) -> bool:
    """Whether a top-level module name belongs to Python or an installed package (not the user's code)."""
    if root in _ALWAYS_LIBRARY or root in getattr(sys, "stdlib_module_names", ()):
        return True
    try:
        spec = importlib.util.find_spec(root)
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    origin = spec.origin or next(iter(spec.submodule_search_locations or []), "")
    return origin in ("built-in", "frozen") or any(m in origin for m in ("site-packages", "dist-packages"))


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
    return not _is_library_root(root)
