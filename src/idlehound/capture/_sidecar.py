"""Exact call-site lines from the in-process profiler event tree (the JSON only has def lines)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_sidecar(prof: Any, path: Path, script: str = "") -> int:
    """Write gzipped {"frames": [[abs_start_ns, name, caller_file, caller_line, caller_func], ...]}.

    Only calls made from the user's own files are kept: those are the lines a finding can point at.
    Returns the number of rows.
    """
    import gzip
    import sys

    from .._paths import is_user_file

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
        if caller is None or not is_user_file(caller.file_name):
            continue
        rows.append([int(node.start_time_ns), node.name, caller.file_name, int(caller.line_number),
                     caller.function_name])
    doc = {"version": 1, "script": script, "sys_path": list(sys.path), "frames": rows}
    path.write_bytes(gzip.compress(json.dumps(doc).encode(), compresslevel=6))
    return len(rows)
