"""Telling the user's own source files from Python's, torch's and other installed packages'.

Analysis decides from the file name string alone, plus what capture recorded in the run folder: it never
imports, looks up or opens a module or file that a trace names (a trace may come from anyone). Same run folder,
same answer on any machine.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

# Library folders in an absolute path: installed packages, the standard library, idlehound itself, and the code
# torch.compile generates (the user cannot edit it; the user's frame that called it is the line to show).
_LIB_PATH = re.compile(
    r"site-packages/|dist-packages/|/lib(?:64)?/(?:python|pypy)\d|/idlehound/|/torchinductor_"
)
_BUILTIN_WORKLOADS = ("idlehound/workloads/", "idlehound/demo.py")
_WINDOWS_ABS = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


def _names(file: str) -> frozenset[str]:
    text = (Path(__file__).parent / "data" / file).read_text(encoding="utf-8")
    return frozenset(s for s in (ln.split("#", 1)[0].strip() for ln in text.splitlines()) if s)


STDLIB_MODULES = _names("stdlib_modules.txt")
KNOWN_LIBRARIES = _names("known_libraries.txt")


def is_absolute(path: str) -> bool:
    """POSIX or Windows absolute, whatever machine runs this (os.path would answer for this machine only)."""
    return path.startswith("/") or bool(_WINDOWS_ABS.match(path))


def module_root(path: str) -> str:
    """'torch/nn/modules/module.py' -> 'torch'; 'train.py' -> 'train'."""
    first = path.replace("\\", "/").split("/", 1)[0]
    return first[:-3] if first.endswith(".py") else first


def is_builtin_workload(path: str) -> bool:
    """idlehound's demo and ladder workloads: their training code stands in for the user's."""
    norm = path.replace("\\", "/")
    return any(w in norm for w in _BUILTIN_WORKLOADS)


def is_user_file(path: str) -> bool:
    """True for the user's own files by the path string alone; False for Python, torch and known packages.

    Paths may be absolute, or shortened by the profiler (site-packages and sys.path prefixes removed).
    """
    if not path or path.startswith("<"):
        return False
    if is_builtin_workload(path):
        return True
    norm = path.replace("\\", "/")
    if is_absolute(path):
        return _LIB_PATH.search(norm.lower()) is None
    root = module_root(norm)
    return root not in STDLIB_MODULES and root not in KNOWN_LIBRARIES


class UserCode:
    """Which frame files are the user's, for one run folder.

    `files` holds capture's own decision per file name; `library_roots` and `library_prefixes` what capture
    knew were libraries (module roots, absolute folders). Anything else falls back to `is_user_file`.
    """

    def __init__(
        self,
        files: Mapping[str, bool] | None = None,
        library_roots: Iterable[str] = (),
        library_prefixes: Iterable[str] = (),
    ) -> None:
        self.files = dict(files or {})
        self.library_roots = frozenset(library_roots)
        self.library_prefixes = tuple(p for p in library_prefixes if p)
        self._cache: dict[str, bool] = {}

    def __call__(self, path: str) -> bool:
        hit = self._cache.get(path)
        if hit is None:
            if len(self._cache) > 65536:  # BY_NAME lives as long as the process: keep it bounded
                self._cache.clear()
            hit = self._cache[path] = self._decide(path)
        return hit

    def _decide(self, path: str) -> bool:
        if path in self.files:
            return self.files[path]
        if is_builtin_workload(path):
            return True
        if not is_user_file(path):
            return False
        if is_absolute(path):
            return not path.startswith(self.library_prefixes)
        return module_root(path) not in self.library_roots


BY_NAME = UserCode()  # a trace with no capture record: the path-string rule alone
