"""What idlehound knows of training frameworks: one module per framework, each holding its knowledge as data.

A framework module (`transformers`, `lightning`, `accelerate`, `tqdm`) declares one `Framework`: the files that
show it runs the loop, its idle sources (`FrameworkEntry`: the library frames that identify a host read, the
fix and code), its own settings for the generic causes (`FrameworkSetting`), and the names of its tune changes,
tune candidates and callback (those live in layers above; tests/test_frameworks.py checks that each resolves).
`_match` finds the entries' sources in a trace's Python stacks; `_refine` is the rule that rewrites the other
rules' findings with them. Adding a framework: a module here, its line in FRAMEWORKS, a test on a recording.
"""

from __future__ import annotations

from typing import Optional

from ...analysis import Analysis
from ...vocabulary import Cause, FixName
from .._finding import Finding
from . import accelerate, lightning, tqdm, transformers
from ._match import FrameworkMatch, source_text, sync_stacks
from ._match import find_matches as _find_matches
from ._match import match_stack as _match_stack
from ._refine import refine
from ._refine import replay_keys as _replay_keys
from ._refine import runner as _runner
from ._table import Framework, FrameworkEntry, FrameworkSetting

# Most specific runner first: the HF Trainer runs on accelerate, so transformers is tried before accelerate.
FRAMEWORKS: tuple[Framework, ...] = (
    transformers.FRAMEWORK,
    lightning.FRAMEWORK,
    accelerate.FRAMEWORK,
    tqdm.FRAMEWORK,
)
ENTRIES: tuple[FrameworkEntry, ...] = tuple(
    sorted((e for fw in FRAMEWORKS for e in fw.entries), key=lambda e: e.order)
)
SETTINGS: tuple[FrameworkSetting, ...] = tuple(s for fw in FRAMEWORKS for s in fw.settings)
RULE = refine(FRAMEWORKS)


def find_matches(a: Analysis) -> list[FrameworkMatch]:
    """Sync points whose stack matches a framework entry, grouped by entry and library function, most first."""
    return _find_matches(a, ENTRIES)


def match_stack(
    stack: list[str], entries: Optional[tuple[FrameworkEntry, ...]] = None
) -> Optional[tuple[FrameworkEntry, tuple[str, int, str]]]:
    """The first entry (of ENTRIES unless given) whose frames appear in `stack` (python_function names,
    innermost first), with the library frame that matched; None when none does."""
    return _match_stack(stack, ENTRIES if entries is None else entries)


def annotate(a: Analysis, findings: list[Finding]) -> list[Finding]:
    """The findings with their fixes phrased as the framework's (the rule's refinement; returns new findings)."""
    assert RULE.refine is not None
    return RULE.refine(a, findings)


def runner(a: Analysis) -> Optional[Framework]:
    """The framework whose code runs the loop (python_function frames), or None."""
    return _runner(a, FRAMEWORKS)


def replay_keys(a: Analysis) -> dict[Cause, FixName]:
    """cause -> the replay fix its finding's fix makes, where the runner's setting makes another change."""
    return _replay_keys(a, FRAMEWORKS)


__all__ = [
    "ENTRIES",
    "FRAMEWORKS",
    "RULE",
    "SETTINGS",
    "Framework",
    "FrameworkEntry",
    "FrameworkMatch",
    "FrameworkSetting",
    "annotate",
    "find_matches",
    "match_stack",
    "replay_keys",
    "runner",
    "source_text",
    "sync_stacks",
]
