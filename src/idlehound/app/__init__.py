"""The application layer: what each command and `idlehound.profile()` do end to end.

The CLI parses options and calls these; capture calls back into `analyze_run` only through the hook that
`profile` hands it. See docs/architecture.md for the layers.
"""

from ._after import analyze_run, report_ranks
from ._capture import (
    RunOptions,
    capture,
    misplaced_options,
    profile,
    report_capture,
    run,
    unknown_option,
    why_no_trace,
)
from ._commands import analyze, analyze_ranks, compare, demo, doctor, ladder, lint, report, tune
from ._watch import capture as capture_window

__all__ = [
    "RunOptions",
    "analyze",
    "analyze_ranks",
    "analyze_run",
    "capture",
    "capture_window",
    "compare",
    "demo",
    "doctor",
    "ladder",
    "lint",
    "misplaced_options",
    "profile",
    "report",
    "report_capture",
    "report_ranks",
    "run",
    "tune",
    "unknown_option",
    "why_no_trace",
]
