"""The words the layers pass to each other: finding causes, severities and kinds, idle causes, the replay's fix
names, the profiler's step actions, and tune's loss checks and outcome statuses.

One module at the bottom of the layers (tests/test_layers.py), so that analysis, capture, diagnose, report, tune
and the integrations all name the same members. Values are the strings the JSON documents carry: a member
prints, formats, compares and hashes as its value, so a document written before these types existed reads the
same. Their texts (titles, fixes, definitions) live with the code that shows them (diagnose/_registry.py).
"""

from __future__ import annotations

from enum import Enum
from typing import Literal, Union


class StrEnum(str, Enum):
    """A str-valued enum that prints and formats as its value, so JSON and text keep the plain string."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Cause(StrEnum):
    """A finding's cause: the `cause` key of a finding in the report."""

    DATA_LOADING = "data_loading"
    SYNC = "sync"
    PAGEABLE_COPY = "pageable_copy"
    LAUNCH_BOUND = "launch_bound"
    HOST_BOUND = "host_bound"
    FP32_MATH = "fp32_math"
    CUDNN_BENCHMARK = "cudnn_benchmark"
    MEMORY_CHURN = "memory_churn"
    NEAR_OOM = "near_oom"
    FRAMEWORK_SYNC = "framework_sync"


class Severity(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Kind(StrEnum):
    IDLE = "idle"  # explains GPU idle time
    SLOW = "slow"  # slow GPU work
    RISK = "risk"  # no time lost yet


class IdleCause(StrEnum):
    """What the host was doing while the GPU idled, in the order a gap's time is claimed (docs/metrics.md).

    Texts for each (label, definition) live in diagnose/_registry.py."""

    DATA_LOADING = "data_loading"
    ALLOCATOR = "allocator"
    SYNC = "sync"
    LAUNCH = "launch"
    CPU_OPS = "cpu_ops"
    PYTHON = "python"


class FixVariant(StrEnum):
    """Another way of fixing a cause than its own replay fix: what a framework setting or a tune candidate makes
    instead (torch.compile in its default mode for launch-bound work)."""

    COMPILE = "compile"


# A replay fix's name (analysis ALL_FIXES): a finding's cause, or a variant.
FixName = Union[Cause, FixVariant]


class ProfilerAction(StrEnum):
    """What the profiler does at a step (torch.profiler.ProfilerAction's names), plus capture's own two."""

    NONE = "NONE"
    WARMUP = "WARMUP"
    RECORD = "RECORD"
    RECORD_AND_SAVE = "RECORD_AND_SAVE"
    CUT = "CUT"  # the step a cut (budget, signal) stopped the window in
    LATER_WINDOW = "LATER_WINDOW"  # a step of a window reopened later (--watch)


RECORDING: frozenset[ProfilerAction] = frozenset({ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE})

# What ends a step (--step-on): one of these, or the name of a function whose return ends it.
StepMode = Literal["optimizer", "dataloader", "manual"]
STEP_MODES: tuple[StepMode, ...] = ("optimizer", "dataloader", "manual")
StepOn = Union[StepMode, str]  # a mode, or a function's name

# How a tune candidate's losses are checked against the baseline's: exactly, or within a precision tolerance.
Math = Literal["same", "precision"]

# What became of a tune candidate: ran and kept the math, or why not.
OutcomeStatus = Literal["ok", "rejected", "skipped", "failed", "not applicable"]

__all__ = [
    "RECORDING",
    "STEP_MODES",
    "Cause",
    "FixName",
    "FixVariant",
    "IdleCause",
    "Kind",
    "Math",
    "OutcomeStatus",
    "ProfilerAction",
    "Severity",
    "StepMode",
    "StepOn",
    "StrEnum",
]
