"""Reading torch.profiler (Kineto) traces into a columnar table."""

from .. import _limits  # noqa: F401 - moved to idlehound._limits; tests/unit/test_hostile.py reads it from here
from ._files import TraceFile, list_traces
from ._load import Trace, load_trace, parse_trace_bytes
from ._table import EventTable

__all__ = ["EventTable", "Trace", "TraceFile", "list_traces", "load_trace", "parse_trace_bytes"]
