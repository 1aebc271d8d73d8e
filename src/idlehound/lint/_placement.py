"""IH015 once per program: cudnn.benchmark is one switch for the process, set where the program starts. When a
linted script that imports a module (however deep) already reports IH015, that module's own convolution is not
reported again: both findings ask for the same one line."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ._catalog import LintFinding
from ._project import imported_files, importers

if TYPE_CHECKING:
    from ._rules import Checker


def one_switch(checkers: dict[Path, Checker], linted: list[Path]) -> dict[Path, list[LintFinding]]:
    """Each linted file's findings, less the IH015 of a file that a linted file reporting IH015 imports."""
    out = {k: checkers[k].findings() for k in linted}
    imports = {k: imported_files(k, checkers[k].tree, set(linted)) for k in linted}
    reports = {k for k in linted if any(f.rule == "IH015" for f in out[k])}
    above = {k: importers(k, imports) for k in reports}
    for k in reports:  # (a file importing k that k imports in turn is not above it)
        if any(q in reports and k not in above[q] for q in above[k]):
            out[k] = [f for f in out[k] if f.rule != "IH015"]
    return out
