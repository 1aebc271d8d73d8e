"""idlehound: catch a GPU slacking during PyTorch training, name why, point at the line, prove the fix.

Public API (every function works without the CLI):

    trace = idlehound.load_trace("log/run-1")          # file or TensorBoard log dir
    result = idlehound.analyze(trace)                  # steps, breakdown, idle gaps by cause
    findings = idlehound.diagnose(result)              # ranked causes with evidence and fixes
    report = idlehound.report_data(result, findings)   # the JSON document
"""

# First, before anything slow is imported: Ctrl-C while the CLI starts exits 130 quietly.
from ._startup import quiet_interrupts

quiet_interrupts()

from typing import Optional  # noqa: E402  (after the interrupt guard, on purpose)

from ._version import __version__  # noqa: E402
from .analysis import Analysis  # noqa: E402
from .diagnose import Finding, Thresholds, diagnose  # noqa: E402
from .errors import CaptureError, IdlehoundError, TraceError  # noqa: E402
from .trace import Trace, load_trace  # noqa: E402


def analyze(
    trace: Trace, sidecar: Optional[dict] = None, step: Optional[int] = None, run_info: Optional[dict] = None
) -> Analysis:
    """Steps, breakdown and idle gaps by cause, as `idlehound analyze` computes them.

    Reads the trace's run folder (capture sidecar, run.json) like the CLI does, so both give the same report;
    `sidecar` / `run_info` given here take the place of the folder's.
    """
    from .pipeline import analyze_run_folder

    return analyze_run_folder(trace, step=step, sidecar=sidecar, run_info=run_info)


def report_data(result: Analysis, findings: list[Finding]) -> dict:
    """The versioned JSON report (schema in docs/json-schema.md)."""
    from .report import build

    return build(result, findings)


def profile(*args, **kwargs):
    """Profile a block of training code (idlehound.capture.profile), then analyse and report it (idlehound.app)."""
    from .app import profile as _profile

    return _profile(*args, **kwargs)


__all__ = [
    "Analysis",
    "CaptureError",
    "Finding",
    "IdlehoundError",
    "Thresholds",
    "Trace",
    "TraceError",
    "__version__",
    "analyze",
    "diagnose",
    "load_trace",
    "profile",
    "report_data",
]
