"""idlehound: catch a GPU slacking during PyTorch training, name why, point at the line, prove the fix.

Public API (every function works without the CLI):

    result = idlehound.analyze("log")                  # a trace, a run folder or a log dir: what the CLI prints
    result.findings, result.doc                        # ranked causes with evidence and fixes; the JSON document
    result                                             # in Jupyter: the HTML report's headline, charts, findings
    result.to_pandas()                                 # the report's tables as DataFrames (pandas installed)
    result.write("report.html")                        # the report as a file (.json, .md, .html), as `-o` writes it

    trace = idlehound.load_trace("log/run-1")          # file or TensorBoard log dir
    result = idlehound.analyze(trace)                  # the same from a loaded trace
    findings = idlehound.diagnose(result)              # (older code: a result is an Analysis, too)
    report = idlehound.report_data(result, findings)   # the JSON document
"""

# First, before anything slow is imported: Ctrl-C while the CLI starts exits 130 quietly.
from ._startup import quiet_interrupts

quiet_interrupts()

import os  # noqa: E402  (after the interrupt guard, on purpose)
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Optional, Union  # noqa: E402

from ._version import __version__  # noqa: E402
from .analysis import Analysis  # noqa: E402
from .diagnose import Diagnosis, Finding, Thresholds, diagnose  # noqa: E402
from .errors import CaptureError, IdlehoundError, SettingError, TraceError  # noqa: E402
from .result import Result  # noqa: E402
from .trace import Trace, load_trace  # noqa: E402


def analyze(
    source: Union[str, "os.PathLike[str]", Trace],
    sidecar: Optional[dict[str, Any]] = None,
    step: Optional[int] = None,
    run_info: Optional[dict[str, Any]] = None,
    *,
    run: Optional[str] = None,
    worker: Optional[str] = None,
    thresholds: Optional[Thresholds] = None,
) -> Result:
    """Analyse and diagnose a trace as `idlehound analyze` does: the same findings and document.

    `source` is a path (str or Path: a `.pt.trace.json[.gz]`, a run folder or a TensorBoard log dir; `run` and
    `worker` choose inside a log dir as the CLI's options do) or a trace from `load_trace()`. The run folder's
    capture sidecar and run.json are read like the CLI reads them; `sidecar` / `run_info` given here take their
    place. Raises TypeError for any other `source`, TraceError for a file that is not a readable trace.
    """
    from .pipeline import analyze_path, diagnose_trace

    if isinstance(source, Trace):
        return diagnose_trace(source, step, thresholds, sidecar, run_info).diagnosed()
    if isinstance(source, (str, os.PathLike)):
        path = Path(os.fspath(source))
        return analyze_path(
            path, run, worker, step, thresholds, sidecar=sidecar, run_info=run_info
        ).diagnosed()
    raise TypeError(
        "idlehound.analyze() takes a path (str or pathlib.Path: a .pt.trace.json[.gz] file, a run folder or a "
        f"log dir) or a Trace from idlehound.load_trace(), not {type(source).__name__}"
    )


def report_data(result: Analysis, findings: Union[Diagnosis, Sequence[Finding]]) -> dict[str, Any]:
    """The versioned JSON report (schema in docs/json-schema.md) of a diagnosis (`diagnose()`); given a list of
    findings instead, the replay's prediction and the rules not checked are taken from `result`'s own diagnosis
    when it is a Result (else none)."""
    from .report import build

    if not isinstance(findings, Diagnosis):
        own = result.diagnosis if isinstance(result, Result) else Diagnosis()
        findings = Diagnosis(tuple(findings), own.prediction, own.not_checked)
    return build(result, findings)


def profile(*args: Any, **kwargs: Any) -> Any:
    """Profile a block of training code (idlehound.capture.profile), then analyse and report it (idlehound.app)."""
    from .app import profile as _profile

    return _profile(*args, **kwargs)


__all__ = [
    "Analysis",
    "CaptureError",
    "Diagnosis",
    "Finding",
    "IdlehoundError",
    "Result",
    "SettingError",
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
