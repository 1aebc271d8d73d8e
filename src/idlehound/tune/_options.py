"""What a tune is asked to do (the command line's options) and how it reports progress."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional


@dataclass
class TuneOptions:
    steps: int = 100
    skip: int = 20
    try_: list[str] = field(default_factory=list)
    skip_candidates: list[str] = field(default_factory=list)
    logdir: Path = Path("log")
    diagnose: bool = True
    timeout_s: int = 900  # per child process (--child-timeout)
    min_rounds: int = 3
    max_rounds: int = 5
    seed: int = 0
    budget_s: Optional[float] = (
        None  # wall time for the whole tune: candidates that would not fit are not tried
    )


Progress = Callable[[str, int, int], None]  # (what runs now, runs done, runs planned; 0 while not yet known)
