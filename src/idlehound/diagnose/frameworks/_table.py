"""The shapes of framework knowledge: an idle source inside a framework (FrameworkEntry), a generic cause's fix
phrased as a framework's setting (FrameworkSetting), and one framework's record (Framework).

`frames` says how to recognise a source in a trace: a (file suffix, function names) pair that must appear in the
python_function stack above the sync point. With `innermost`, only the nearest library frame counts (the sync
sits directly in that function, as the Trainer's NaN/Inf check does), so a sync deeper in a call it makes (the
optimizer's, say) does not match. Suffixes name the library's file, never a line: lines move between versions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...vocabulary import Cause, FixVariant


@dataclass(frozen=True)
class FrameworkEntry:
    name: str
    framework: str
    title: str
    frames: tuple[tuple[str, tuple[str, ...]], ...]
    fix: str
    code: str
    order: (
        int  # entries are tried lowest first: a stack may hold two frameworks' frames (tqdm under a Trainer)
    )
    innermost: bool = False
    # the library call in the user's code that sets the source up (`self.log(...)`): the reads happen later,
    # inside the framework's loop, so the user line above them is `.fit()`; the finding points here instead
    set_at: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class FrameworkSetting:
    """A generic cause's fix phrased as the setting of the framework that runs the loop. `code` may hold
    {workers}: the worker count of the generic finding's own code."""

    framework: str
    cause: Cause
    fix: str
    code: str
    replay: FixVariant | None = None  # the replay fix (ALL_FIXES) it makes, where not the cause's own
    # (pattern, fix, code): said instead where the text of the finding's line matches the pattern (the first
    # that does), so the fix names what the script has (`datamodule=` vs `train_dataloaders=` vs a hook)
    by_line: tuple[tuple[str, str, str], ...] = ()

    def phrased(self, line: str) -> tuple[str, str]:
        """(fix, code) for a finding whose source line reads `line` ("" where capture kept none)."""
        return next(
            ((fix, code) for pat, fix, code in self.by_line if re.search(pat, line)), (self.fix, self.code)
        )


@dataclass(frozen=True)
class Framework:
    """What idlehound knows of one framework: how to tell that it runs the loop, the idle sources inside it, its
    own settings for the generic causes, and where its tune changes and callback live (as names: they sit in
    layers above diagnose; tests/test_frameworks.py checks that each resolves)."""

    name: str
    words: str  # its name in a sentence ("the Lightning Trainer")
    runner_files: tuple[str, ...] = ()  # a python_function frame from one of these: it runs the loop
    entries: tuple[FrameworkEntry, ...] = ()
    settings: tuple[FrameworkSetting, ...] = ()
    tune_changes: tuple[str, ...] = ()  # keys of tune/_changes (the child injects them, the diff writes them)
    tune_candidates: tuple[str, ...] = ()  # names in tune/_candidates.framework_candidates()
    callback: str = ""  # "module:Class" of its integration
    docs: str = ""
