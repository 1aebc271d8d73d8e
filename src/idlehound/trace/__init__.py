"""Reading profiler traces into a columnar table: torch.profiler's Kineto JSON today; other formats plug in as
readers (_reader.TraceReader, registered in _load.READERS)."""

from ._events import EventTable
from ._files import TraceFile, list_traces
from ._kineto import parse_trace_bytes
from ._load import load_trace
from ._reader import Trace, TraceReader

__all__ = [
    "EventTable",
    "Trace",
    "TraceFile",
    "TraceReader",
    "list_traces",
    "load_trace",
    "parse_trace_bytes",
]
