"""The capture sidecar: what analysis needs from the user's machine, recorded there, so that the analysis of a run
folder depends only on the folder.

- exact call-site lines, from the in-process profiler event tree (the JSON only has def lines);
- which frame files were the user's code and which were libraries (decided here, in the user's own process);
- the user's own source lines around every line a report may point at (the only snippets a report shows);
- near idle time only (host reads of device values, blocking calls, collectives, DataLoader waits): the exact
  library lines on the stack above each such point, and those library lines' text, so a finding can name the
  innermost library line that blocks (`transformers/trainer.py:1922`) beside the user line that reached it.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import sys
from pathlib import Path
from typing import Any, Optional

from .._paths import is_absolute, is_builtin_workload, is_user_file, module_root

SIDECAR_VERSION = 3  # 3 adds library_calls, points and library_sources (idle points only)
CONTEXT = 3  # source lines kept either side of a referenced line
MAX_LINE_CHARS = 300
MAX_LINES_PER_FILE = 600
MAX_LINES = 6000
MAX_SOURCE_BYTES = 8 << 20  # larger files are not the user's hand-written training code
MAX_POINTS = 2000  # idle points whose library stacks are kept (a window has a few per step)
MAX_LIBRARY_ROWS = 20000
LIBRARY_CONTEXT = 2  # library source lines kept either side of a referenced line
MAX_LIBRARY_LINES = 1500


def write_sidecar(prof: Any, path: Path, script: str = "", cwd: Optional[str] = None) -> int:
    """Write the gzipped sidecar (docs/security.md lists its fields). Returns the number of caller rows.

    Only calls made from the user's own files are kept: those are the lines a finding can point at.
    """
    nodes, points = _python_nodes(prof)
    here = CaptureFiles(cwd or os.getcwd(), script)
    files = {p[0] for p in (_parse(n.name) for n in nodes) if p}
    files |= {c.file_name for c in (_caller(n) for n in nodes) if c is not None}
    decided = {f: here.is_user(f) for f in sorted(files) if f}
    rows: list[list[Any]] = []
    refs: dict[str, set[int]] = {}
    for node in nodes:
        parsed = _parse(node.name)
        if parsed and decided.get(parsed[0]):
            refs.setdefault(parsed[0], set()).add(parsed[1])  # a def line a location may point at
        caller = _caller(node)
        if caller is None or not decided.get(caller.file_name):
            continue
        rows.append(
            [
                int(node.start_time_ns),
                node.name,
                caller.file_name,
                int(caller.line_number),
                caller.function_name,
            ]
        )
        refs.setdefault(caller.file_name, set()).add(int(caller.line_number))
    lib_rows, point_rows, lib_refs = _library_stacks(points, decided)
    doc = {
        "version": SIDECAR_VERSION,
        "script": script,
        "cwd": here.cwd,
        "sys_path": list(sys.path),
        "library_prefixes": list(here.prefixes),
        "library_roots": _library_roots(decided),
        "files": decided,
        "sources": read_sources(refs, here),
        "frames": rows,
        "library_calls": lib_rows,
        "points": point_rows,
        "library_sources": read_sources(lib_refs, here, LIBRARY_CONTEXT, MAX_LIBRARY_LINES),
    }
    path.write_bytes(gzip.compress(json.dumps(doc).encode(), compresslevel=6))
    return len(rows)


def _library_roots(decided: dict[str, bool]) -> list[str]:
    """Module roots of shortened names that were only ever libraries here."""
    rel = {f: user for f, user in decided.items() if not is_absolute(f) and not f.startswith("<")}
    user_roots = {module_root(f) for f, user in rel.items() if user}
    return sorted({module_root(f) for f, user in rel.items() if not user} - user_roots)


def _python_nodes(prof: Any) -> tuple[list[Any], list[Any]]:
    """(Python call nodes, outermost idle points) of the profiler's event tree."""
    from ..analysis import roles  # numpy: imported once a window is saved, not with capture

    try:
        from torch._C._profiler import _EventType

        py_tags = {_EventType.PyCall, _EventType.PyCCall}
        stack = [(n, False) for n in prof.profiler.kineto_results.experimental_event_tree()]
    except Exception:  # no tree (older torch, or profiling failed): the analysis falls back to def lines
        return [], []
    out: list[Any] = []
    points: list[Any] = []
    while stack:
        node, in_point = stack.pop()
        point = not in_point and roles.is_idle_point(node.name)
        stack.extend((c, in_point or point) for c in node.children)
        if node.tag in py_tags:
            out.append(node)
        elif point and len(points) < MAX_POINTS:
            points.append(node)
    return out, points


def _library_stacks(
    points: list[Any], decided: dict[str, bool]
) -> tuple[list[Any], list[Any], dict[str, set[int]]]:
    """The exact lines on the stack above each idle point, where they are not the user's (those are in `frames`).

    library_calls: [start_ns, name, file, line, function] of each Python call on those stacks made from a library
    line. points: [start_ns, end_ns, name, file, line, function, how] of each point, the line inside its innermost
    Python frame: how="call" when a Python-visible call (x.item()) holds the point, "after" when the point came from
    bytecode with no call of its own (`if t:`, `a or b` on tensors) and the line is that of the frame's last call
    before it.
    """
    calls: dict[tuple[Any, ...], list[Any]] = {}
    rows: list[list[Any]] = []
    refs: dict[str, set[int]] = {}
    for p in points:
        frames = _python_ancestors(p)
        if not frames:
            continue
        line = _line_inside(frames[0], p)
        if line is not None and len(rows) < MAX_POINTS:
            rows.append([int(p.start_time_ns), int(p.end_time_ns), p.name, *line])
            _ref(refs, decided, line[0], line[1])
        for f in frames:
            c = _caller(f)
            key = (int(f.start_time_ns), f.name)
            if c is None or decided.get(c.file_name, True) or key in calls or len(calls) >= MAX_LIBRARY_ROWS:
                continue
            calls[key] = [key[0], f.name, c.file_name, int(c.line_number), c.function_name]
            _ref(refs, decided, c.file_name, int(c.line_number))
    return list(calls.values()), rows, refs


def _ref(refs: dict[str, set[int]], decided: dict[str, bool], file: str, line: int) -> None:
    if not decided.get(file, True) and not file.startswith(("torch/", "<")):  # library text, not torch's
        refs.setdefault(file, set()).add(line)


def _python_ancestors(node: Any) -> list[Any]:
    from torch._C._profiler import _EventType

    out: list[Any] = []
    n = node.parent
    while n is not None and len(out) < 500:
        if n.tag in (_EventType.PyCall, _EventType.PyCCall):
            out.append(n)
        n = n.parent
    return out


def _line_inside(frame: Any, point: Any) -> Optional[list[Any]]:
    """[file, line, function, how] of the line running in `frame` when `point` started."""
    from torch._C._profiler import _EventType

    if frame.tag == _EventType.PyCCall:  # a C function (x.item(), print): its caller line made the call
        c = _caller(frame)
        return None if c is None else [c.file_name, int(c.line_number), c.function_name, "call"]
    before = [
        ch
        for ch in frame.children
        if ch.tag in (_EventType.PyCall, _EventType.PyCCall) and ch.start_time_ns <= point.start_time_ns
    ]
    c = _caller(max(before, key=lambda ch: ch.start_time_ns)) if before else None
    return None if c is None else [c.file_name, int(c.line_number), c.function_name, "after"]


def _caller(node: Any) -> Any:
    return getattr(node.extra_fields, "caller", None)


def _parse(name: str) -> Optional[tuple[str, int]]:
    from ..analysis import parse_frame

    p = parse_frame(name)
    return (p[0], p[1]) if p else None


class CaptureFiles:
    """This process's view of its own files: where a shortened frame name lives, and whether it is a library.

    Runs at capture time, in the user's process, on the user's machine: it may look at the files its own
    frames name. Analysis never does.
    """

    def __init__(self, cwd: str, script: str = "") -> None:
        self.cwd = cwd
        self.script_dir = str(Path(cwd, script).parent) if script else ""
        self.prefixes = _library_prefixes()
        self._where: dict[str, Optional[str]] = {}

    def resolve(self, file: str) -> Optional[str]:
        """The absolute path of a frame's file (the profiler strips sys.path prefixes), or None."""
        if file not in self._where:
            self._where[file] = self._find(file)
        return self._where[file]

    def _find(self, file: str) -> Optional[str]:
        if not file or file.startswith("<"):
            return None
        if is_absolute(file):
            return file if os.path.isfile(file) else None
        for root in [p or self.cwd for p in sys.path] + [self.cwd, self.script_dir]:
            p = os.path.join(root, file)
            if root and os.path.isfile(p):
                return os.path.abspath(p)
        return None

    def is_user(self, file: str) -> bool:
        if is_builtin_workload(file):
            return True  # the demo's training code stands in for the user's, wherever idlehound is installed
        if not is_user_file(file):
            return False
        where = self.resolve(file) or self._module_file(file)
        return where is None or (is_user_file(where) and not where.startswith(self.prefixes))

    @staticmethod
    def _module_file(file: str) -> Optional[str]:
        """The file of an already imported module of that root (its code ran here: nothing is imported)."""
        if is_absolute(file):
            return None
        f = getattr(sys.modules.get(module_root(file)), "__file__", None)
        return f if isinstance(f, str) else None


def _library_prefixes() -> tuple[str, ...]:
    """Folders of Python's standard library and installed packages on this machine, each ending in '/'."""
    import site
    import sysconfig

    found = [sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")]
    with contextlib.suppress(Exception):  # some virtualenvs' site modules lack these
        found += site.getsitepackages() + [site.getusersitepackages()]
    found += [p for p in sys.path if p and not is_user_file(os.path.join(p, "x.py"))]
    out = {os.path.join(p, "") for p in found if p}
    return tuple(sorted(out))


def read_sources(
    refs: dict[str, set[int]], here: CaptureFiles, context: int = CONTEXT, total: int = MAX_LINES
) -> dict[str, list[Any]]:
    """{file: [[first_line, [line, ...]], ...]}: the lines around each referenced line, bounded in size."""
    out: dict[str, list[Any]] = {}
    budget = total
    for file in sorted(refs):
        text = _read_source(here.resolve(file))
        if text is None or budget <= 0:
            continue
        chunks = _chunks(text, sorted(refs[file]), min(budget, MAX_LINES_PER_FILE), context)
        if chunks:
            out[file] = chunks
            budget -= sum(len(c[1]) for c in chunks)
    return out


def _read_source(path: Optional[str]) -> Optional[list[str]]:
    if path is None:
        return None
    try:
        if os.path.getsize(path) > MAX_SOURCE_BYTES:
            return None
        with open(path, "rb") as f:
            raw = f.read(MAX_SOURCE_BYTES + 1)
    except OSError:
        return None
    return raw.decode("utf-8", errors="replace").splitlines()


def _chunks(text: list[str], lines: list[int], budget: int, context: int = CONTEXT) -> list[Any]:
    """Merge the windows around `lines` into runs of consecutive lines, at most `budget` lines in all."""
    spans: list[list[int]] = []
    for n in lines:
        lo, hi = max(1, n - context), min(len(text), n + context)
        if lo > hi:
            continue
        if spans and lo <= spans[-1][1] + 1:
            spans[-1][1] = max(spans[-1][1], hi)
        else:
            spans.append([lo, hi])
    out = []
    for lo, hi in spans:
        hi = min(hi, lo + budget - 1)
        if hi < lo:
            break
        out.append([lo, [_clip(s) for s in text[lo - 1 : hi]]])
        budget -= hi - lo + 1
    return out


def _clip(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "…"
