"""Exact call-site lines from the in-process profiler event tree (the JSON only has def lines)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_sidecar(prof: Any, path: Path, script: str = "") -> int:
    """Write {"frames": [[abs_start_ns, name, caller_file, caller_line, caller_func], ...]}. Returns rows."""
    import sys

    rows = []
    try:
        from torch._C._profiler import _EventType

        py_tags = {_EventType.PyCall, _EventType.PyCCall}
        roots = prof.profiler.kineto_results.experimental_event_tree()
    except Exception:  # no tree (older torch, or profiling failed): the analysis falls back to def lines
        roots = []
        py_tags = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.tag not in py_tags:
            continue
        caller = getattr(node.extra_fields, "caller", None)
        if caller is None:
            continue
        rows.append([int(node.start_time_ns), node.name, caller.file_name, int(caller.line_number),
                     caller.function_name])
    doc = {"version": 1, "script": script, "sys_path": list(sys.path), "frames": rows}
    path.write_text(json.dumps(doc))
    return len(rows)
