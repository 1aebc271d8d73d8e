"""The rule contract, after torch.profiler's `Pattern`: a name, a description, the data it needs, a match.

A rule whose data is missing from the trace is not run, and the report says so ("not checked: needs GPU
events"): no finding from a rule that could not look is not the same as no finding from one that did.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..analysis import Analysis
from ._finding import Finding, Thresholds
from ._registry import Cause


@dataclass(frozen=True)
class Need:
    """Data a rule requires: an id for JSON, the words the report shows, and how to tell it is there."""

    id: str
    text: str
    present: Callable[[Analysis], bool]


GPU_EVENTS = Need("gpu_events", "GPU events (kernels and copies recorded by CUPTI)", lambda a: a.gpu_recorded)
MEMORY_EVENTS = Need(
    "memory_events",
    "memory events (profile_memory=True) and the device's memory size",
    lambda a: a.memory.recorded and bool(a.memory.capacity),
)
RUN_JSON = Need(
    "run_json",
    "run.json of idlehound run (the cudnn.benchmark setting)",
    lambda a: isinstance(a.run_info.get("cudnn_benchmark"), bool),
)
PYTHON_STACKS = Need("python_stacks", "Python stacks (with_stack=True)", lambda a: a.trace.with_stack)

Match = Callable[[Analysis, Thresholds], list[Finding]]
Refine = Callable[[Analysis, list[Finding]], list[Finding]]


@dataclass(frozen=True)
class Rule:
    """One diagnosis rule. `match` finds new findings; `refine` (optional) rewrites the others' findings."""

    name: str
    description: str
    causes: tuple[Cause, ...]
    needs: tuple[Need, ...] = ()
    match: Optional[Match] = None
    refine: Optional[Refine] = None

    @classmethod
    def of(
        cls,
        cause: Cause,
        description: str,
        needs: tuple[Need, ...] = (),
        match: Optional[Match] = None,
        refine: Optional[Refine] = None,
    ) -> Rule:
        """The rule for one cause, named by the cause's value (the name the report's not_checked carries)."""
        return cls(cause.value, description, (cause,), needs, match, refine)

    def missing(self, a: Analysis) -> list[Need]:
        return [n for n in self.needs if not n.present(a)]

    def skip(self, a: Analysis) -> bool:
        return bool(self.missing(a))

    def report(self, a: Analysis, t: Thresholds) -> list[Finding]:
        return self.match(a, t) if self.match is not None and not self.skip(a) else []

    def not_checked(self, a: Analysis) -> Optional[dict[str, Any]]:
        """The report's entry for this rule when its data is missing, else None."""
        miss = self.missing(a)
        if not miss:
            return None
        return {
            "rule": self.name,
            "causes": [str(c) for c in self.causes],
            "needs": " and ".join(n.text for n in miss),
            "missing": [n.id for n in miss],
        }
