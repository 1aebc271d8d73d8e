"""How to profile: CaptureOptions, the one place its defaults are written."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..vocabulary import StepOn
from ._watch import WatchOptions


@dataclass
class CaptureOptions:
    """How to profile. The window is steps [skip + warmup, skip + warmup + active) of the run.

    Its defaults are the only copy: `idlehound run`'s options, idlehound.profile() and the framework callbacks
    show them by reading the class (CaptureOptions.skip is 10)."""

    logdir: Path = Path("log")
    run_name: Optional[str] = None
    skip: int = 10
    warmup: int = 2
    active: int = 5
    step_on: StepOn = "optimizer"  # one of STEP_MODES, or a function name
    stop_after: bool = False
    with_stack: bool = True
    record_shapes: bool = True
    profile_memory: bool = False
    sample_hz: float = 15.0
    progress: bool = True
    run_dir: Optional[Path] = None  # an existing folder to write into (ranks of one job share one)
    max_window_seconds: float = 120.0  # cut the window when it records longer than this (0: no limit)
    max_window_mb: float = (
        256.0  # ... or when the process grows by more than this while recording (0: no limit); 256 so that
        # SIGTERM's save fits a scheduler's grace period (H200: a 212 MB trace in 5.8 s, 420 MB in 12 s)
    )
    extra: dict[str, Any] = field(default_factory=dict)  # merged into run.json
    watch: Optional[WatchOptions] = None  # later windows on demand or on a slowdown (capture/_watch.py)
