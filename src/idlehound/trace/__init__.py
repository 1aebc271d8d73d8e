"""Reading torch.profiler (Kineto) traces into a columnar table."""

from ._files import TraceFile, list_traces
from ._load import Trace, load_trace, parse_trace_bytes
from ._table import EventTable

__all__ = ["EventTable", "Trace", "TraceFile", "list_traces", "load_trace", "parse_trace_bytes"]
