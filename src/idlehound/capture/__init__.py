"""Capture: run a script or a block under the profiler; write traces, a source-line sidecar, run.json."""

from .. import sampler as _sampler  # noqa: F401 - moved to idlehound.sampler; tests/unit/test_sampler.py
from ._api import profile
from ._runner import RunResult, run_script
from ._session import CaptureOptions, Session, new_run_dir

__all__ = ["CaptureOptions", "RunResult", "Session", "new_run_dir", "profile", "run_script"]
