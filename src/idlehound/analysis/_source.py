"""Map host times to the user's source line, through the python_function tree of the trace.

Without a sidecar the trace only says which user function was running, with its def line
(approximate). A sidecar written at capture time adds each Python call's calling line (exact), which files
were the user's, and the user's source lines around them (the only snippets a report shows).
Nothing here imports, looks up or opens what a trace names.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np

from .._paths import BY_NAME, UserCode, is_user_file
from ..trace import EventTable

__all__ = ["SourceLoc", "SourceMap", "is_library", "is_user_file", "load_sidecar", "parse_frame"]

_FRAME_RE = re.compile(r"^(?P<file>.*)\((?P<line>\d+)\): (?P<func>.*)$")


@dataclass(frozen=True)
class SourceLoc:
    """A place in the user's code. `exact` is False when only the function's def line is known."""

    file: str
    line: int
    function: str
    exact: bool
    snippet: Optional[tuple[int, tuple[str, ...]]] = None  # (first line, lines) as capture stored them

    def __str__(self) -> str:
        return location_text(self)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "file": self.file,
            "line": self.line,
            "function": self.function,
            "exact": self.exact,
        }
        if self.snippet is not None:
            out["snippet"] = {"first_line": self.snippet[0], "lines": list(self.snippet[1])}
        return out


NO_USER_FRAME = "(no user frame)"


def location_text(loc: Union[SourceLoc, Mapping[str, Any], None], approx: bool = True) -> str:
    """A source location as text, from a SourceLoc or its JSON: 'file:line', with ' (in f, def line)' when
    only the function's def line is known (unless approx=False); '(no user frame)' for None."""
    if loc is None:
        return NO_USER_FRAME
    d = loc.to_json() if isinstance(loc, SourceLoc) else loc
    text = f"{d['file']}:{d['line']}"
    if approx and not d.get("exact", True):
        text += f" (in {d.get('function', '?')}, def line)"
    return text


@functools.lru_cache(maxsize=65536)
def parse_frame(name: str) -> Optional[tuple[str, int, str]]:
    m = _FRAME_RE.match(name)
    return (m.group("file"), int(m.group("line")), m.group("func")) if m else None


class SourceMap:
    """Python frames of one trace, indexed per thread, with a user-code anchor for every frame."""

    def __init__(self, ev: EventTable, sidecar: Optional[dict[str, Any]] = None) -> None:
        m = ev.mask_cat("python_function")
        idx = np.flatnonzero(m)
        order = np.lexsort((ev.ts[idx], ev.tid[idx]))
        idx = idx[order]
        self.tid = ev.tid[idx]
        self.start = ev.ts[idx]
        self.end = ev.ts[idx] + ev.dur[idx]
        self.n = idx.size
        self._names = list(map(ev.names.__getitem__, ev.name[idx].tolist()))  # C-level: 1e5s of frames
        self.parent = self._parents(ev.py_id[idx], ev.py_parent[idx])
        self._parents_py: Optional[list[int]] = None
        self._lib_memo: dict[int, Optional[tuple[int, int]]] = {}  # _library_frame's answers
        self._locs: dict[tuple[Any, ...], SourceLoc] = {}
        self.loc: list[Optional[SourceLoc]] = []
        self.anchor = self._anchors(sidecar or {})
        self._library_data(sidecar or {})
        self.threads = {int(t): (lo, hi) for t, lo, hi in _runs(self.tid)}

    @staticmethod
    def _parents(py_id: np.ndarray, py_parent: np.ndarray) -> np.ndarray:
        if py_id.size == 0:
            return np.zeros(0, dtype=np.int64)
        order = np.argsort(py_id, kind="stable")
        sorted_ids = py_id[order]
        pos = np.clip(np.searchsorted(sorted_ids, py_parent), 0, py_id.size - 1)
        found = (sorted_ids[pos] == py_parent) & (py_parent != -1)
        return np.where(found, order[pos], -1)

    def _anchors(self, sidecar: dict[str, Any]) -> np.ndarray:
        """anchor[i]: nearest ancestor-or-self frame whose location is in user code, or -1."""
        callers = sidecar.get("callers", {})
        self.is_user: UserCode = sidecar.get("code") or BY_NAME
        self._sources: dict[str, list[Any]] = sidecar.get("sources") or {}
        by_name: dict[str, Optional[SourceLoc]] = {}  # def-line locations depend on the name only
        for name in set(self._names):
            parsed = parse_frame(name)
            by_name[name] = (
                self._loc(parsed[0], parsed[1], parsed[2], False)
                if parsed and self.is_user(parsed[0])
                else None
            )
        self.loc = list(map(by_name.__getitem__, self._names))
        if callers:
            for i, name in enumerate(self._names):
                loc = self._exact(callers, int(self.start[i]), name)
                if loc is not None:
                    self.loc[i] = loc
        is_anchor = np.fromiter(map(operator.is_not, self.loc, repeat(None)), dtype=bool, count=self.n)
        # Pointer doubling: nxt[i] is i for anchors, else an ancestor; squaring halves the remaining depth.
        nxt = np.where(is_anchor, np.arange(self.n), self.parent)
        for _ in range(64):
            safe = np.clip(nxt, 0, None)
            step = np.where((nxt >= 0) & ~is_anchor[safe], nxt[safe], nxt)
            if np.array_equal(step, nxt):
                break
            nxt = step
        return nxt

    def _library_data(self, sidecar: dict[str, Any]) -> None:
        """Exact lines on the stacks above idle points (sidecar version 3): calls made from any line there."""
        self._calls: dict[Any, Any] = {
            **(sidecar.get("library_calls") or {}),
            **(sidecar.get("callers") or {}),
        }
        pts = sidecar.get("points") or []
        self._pt_start = np.array([p[0] for p in pts], dtype=np.int64)
        self._pts: list[tuple[Any, ...]] = pts  # lists as JSON holds them; read by index only
        self._lib_sources: dict[str, list[Any]] = sidecar.get("library_sources") or {}

    def _point_at(self, t: int) -> Optional[tuple[Any, ...]]:
        """The idle point (start, end, file, line, function) running at time t, or None."""
        k = int(np.searchsorted(self._pt_start, t, side="right")) - 1
        for j in range(k, max(k - 8, -1), -1):  # points are outermost: at most a few (threads) overlap t
            if self._pts[j][1] >= t:
                return self._pts[j]
        return None

    def path(self, tid: int, t: int) -> list[int]:
        """Frames running on thread tid at time t, innermost first."""
        return self._path_from(int(self.innermost(np.array([tid]), np.array([t]))[0]))

    def _path_from(self, k: int) -> list[int]:
        out: list[int] = []
        while k >= 0 and len(out) < 500:
            out.append(k)
            k = int(self.parent[k])
        return out

    def line_inside(self, path: list[int], i: int, t: int) -> Optional[SourceLoc]:
        """The exact line running inside frame path[i] at time t, where capture recorded it; else None."""
        frame = parse_frame(self._names[path[i]])
        if frame is None:
            return None
        if i == 0:
            pt = self._point_at(t)
            row = pt[2:] if pt is not None else None
        else:
            row = self._calls.get((int(self.start[path[i - 1]]), self._names[path[i - 1]]))
        if row is None or row[0] != frame[0]:
            return None
        return SourceLoc(row[0], int(row[1]), row[2], True, self._snippet(row[0], int(row[1])))

    def library_line(self, tid: int, t: int) -> Optional[SourceLoc]:
        """The innermost library line (not the user's, not torch's) running at (tid, t) below the user's code.

        Exact where capture recorded the stack (sidecar version 3, near idle points); else the library
        function's def line. None when the user's code is reached first (the time is spent in the user's line).
        """
        return self.library_lines(np.array([tid]), np.array([t]))[0]

    def library_lines(self, tids: np.ndarray, times: np.ndarray) -> list[Optional[SourceLoc]]:
        """library_line for each (tid, time)."""
        ks = self.innermost(np.asarray(tids), np.asarray(times)) if self.n else np.full(len(times), -1)
        pts = np.searchsorted(self._pt_start, times, side="right") - 1
        cache: dict[tuple[int, int], Optional[SourceLoc]] = {}
        out = []
        for k, t, pt in zip(ks.tolist(), np.asarray(times).tolist(), pts.tolist()):
            key = (k, pt if pt >= 0 and self._pts[pt][1] >= t else -1)  # same frame, same point: same line
            if key not in cache:
                cache[key] = self._library_in(k, t)
            out.append(cache[key])
        return out

    def _library_in(self, k: int, t: int) -> Optional[SourceLoc]:
        hit = self._library_frame(k)
        if hit is None:
            return None
        lib, below = hit
        frame = parse_frame(self._names[lib])
        assert frame is not None  # a library frame parses
        path = [lib] if below < 0 else [below, lib]
        return self.line_inside(path, len(path) - 1, t) or self._loc_at(frame, False)

    def _library_frame(self, k: int) -> Optional[tuple[int, int]]:
        """(the first library frame from k up, the frame below it on the way there or -1 when it is k itself), or
        None when a user frame comes first. Kept for every frame walked: the gaps of a trace share ancestors, and a
        walk per gap cost 0.5 s of a 1 GB trace's analysis."""
        memo, parent = self._lib_memo, self._parent_list()
        chain: list[int] = []
        ans: Optional[tuple[int, int]] = None
        while True:
            if k in memo:
                ans = memo[k]
                break
            if k < 0 or len(chain) >= 500:
                return None
            frame = parse_frame(self._names[k])
            if frame is not None and is_library(frame[0], self.is_user):
                ans = memo[k] = (k, -1)
                break
            if self.loc[k] is not None:  # a user frame, or a call made from a user line
                memo[k] = None
                break
            chain.append(k)
            k = parent[k]
        for c in reversed(chain):  # each frame's answer from its parent's
            if ans is not None:
                ans = (ans[0], c if ans[1] < 0 else ans[1])
            memo[c] = ans
        return ans

    def _parent_list(self) -> list[int]:
        """parent as a list of ints: a walk reads it one frame at a time, where numpy's per-item cost shows."""
        if self._parents_py is None:
            self._parents_py = self.parent.tolist()
        return self._parents_py

    def _loc_at(self, frame: tuple[str, int, str], exact: bool) -> SourceLoc:
        """One shared (frozen) object per place: thousands of gaps name the same few library lines."""
        loc = self._locs.get((frame, exact))
        if loc is None:
            loc = SourceLoc(frame[0], frame[1], frame[2], exact, self._snippet(frame[0], frame[1]))
            self._locs[(frame, exact)] = loc
        return loc

    def _snippet(self, file: str, line: int) -> Optional[tuple[int, tuple[str, ...]]]:
        return snippet_at(self._sources.get(file) or self._lib_sources.get(file), line)

    def _exact(self, callers: dict[Any, Any], ts: int, name: str) -> Optional[SourceLoc]:
        c = callers.get((ts, name))
        if c is None or not self.is_user(c[0]):
            return None
        return self._loc(c[0], int(c[1]), c[2], True)

    def _loc(self, file: str, line: int, function: str, exact: bool) -> SourceLoc:
        return SourceLoc(file, line, function, exact, snippet_at(self._sources.get(file), line))

    def time_by_line(self, s0: np.ndarray, s1: np.ndarray, n_steps: int, top: int = 40) -> list[list[Any]]:
        """Time (ms per step) spent inside calls made from each user line, within the steps.

        Only outermost anchors count, so a call and the calls inside it are not counted twice.
        """
        if self.n == 0:
            return []
        anchors = np.flatnonzero(self.anchor == np.arange(self.n))
        parent_anchor = np.where(
            self.parent[anchors] >= 0, self.anchor[np.clip(self.parent[anchors], 0, None)], -1
        )
        # keep anchors whose enclosing anchor is a different line (a loop body frame contains its calls)
        totals: dict[tuple[Any, ...], float] = {}
        lo, hi = s0.min() if s0.size else 0, s1.max() if s1.size else 0
        for k, pa in zip(anchors, parent_anchor):
            loc = self.loc[k]
            if loc is None or not loc.exact or (pa >= 0 and self.loc[pa] is not None and self.loc[pa].exact):
                continue
            a, b = max(int(self.start[k]), lo), min(int(self.end[k]), hi)
            if b > a:
                key = (loc.file, loc.line, loc.function)
                totals[key] = totals.get(key, 0.0) + (b - a) / 1e6 / n_steps
        rows = sorted(([f, ln, fn, round(ms, 4)] for (f, ln, fn), ms in totals.items()), key=lambda r: -r[3])
        return rows[:top]

    def innermost(self, tids: np.ndarray, times: np.ndarray) -> np.ndarray:
        """Index of the innermost frame on tids[i] that contains times[i], or -1."""
        out = np.full(times.shape, -1, dtype=np.int64)
        for t, (lo, hi) in self.threads.items():
            sel = np.flatnonzero(tids == t)
            if sel.size == 0:
                continue
            k = lo + np.searchsorted(self.start[lo:hi], times[sel], side="right") - 1
            k = np.where(k < lo, -1, k)
            for _ in range(256):
                bad = (k >= 0) & (self.end[np.clip(k, 0, None)] < times[sel])
                if not bad.any():
                    break
                k = np.where(bad, self.parent[np.clip(k, 0, None)], k)
            out[sel] = k
        return out

    def call_frame(self, tids: np.ndarray, times: np.ndarray) -> np.ndarray:
        """The call the user's code made (print, .item(), a library function) around each time, or -1.

        With a sidecar the anchor frame is that call itself (its caller line is in user code); from the JSON
        alone the anchor is the user's function, and the call is its child on the path to the time.
        """
        k = self.innermost(np.asarray(tids), np.asarray(times))
        if self.n == 0:
            return k
        kk = np.clip(k, 0, None)
        a = np.where(k >= 0, self.anchor[kk], -1)
        exact = np.array([a_ >= 0 and self.loc[a_].exact for a_ in a], dtype=bool)
        for _ in range(256):
            kk = np.clip(k, 0, None)
            up = ~exact & (k >= 0) & (a >= 0) & (kk != a) & (self.parent[kk] != a)
            if not up.any():
                break
            k = np.where(up, self.parent[kk], k)
        kk = np.clip(k, 0, None)
        return np.where(exact, a, np.where((k >= 0) & (a >= 0) & (kk != a), k, -1))

    def locate(self, tids: np.ndarray, times: np.ndarray) -> list[Optional[SourceLoc]]:
        """User source location for each (thread, time), or None when no user frame encloses it."""
        if self.n == 0:
            return [None] * len(times)
        k = self.innermost(np.asarray(tids), np.asarray(times))
        a = np.where(k >= 0, self.anchor[np.clip(k, 0, None)], -1)
        return [self.loc[i] if i >= 0 else None for i in a]

    def within(self, tid: int, t: int, prefixes: tuple[str, ...]) -> bool:
        """True when a frame between (tid, t) and the nearest user frame belongs to one of prefixes."""
        k = int(self.innermost(np.array([tid]), np.array([t]))[0])
        while k >= 0:
            if self._names[k].startswith(prefixes):
                return True
            if self.loc[k] is not None:  # reached the user's code
                return False
            k = int(self.parent[k])
        return False

    def name(self, k: int) -> str:
        return self._names[k]

    def innermost_name(self, tid: int, t: int) -> Optional[str]:
        k = self.innermost(np.array([tid]), np.array([t]))[0]
        return self._names[k] if k >= 0 else None


def is_library(file: str, is_user: Any = None) -> bool:
    """A framework or package file whose lines a finding may name: not the user's, not torch's own internals
    (the caller inside the framework is what one can change), not a C function."""
    if not file or file.startswith(("<", "torch/", "idlehound/")) or "/torch/" in file:
        return False  # idlehound's own frames are the capture (`idlehound run`, the window's start and stop)
    return not (is_user or is_user_file)(file)


def _runs(keys: np.ndarray) -> Iterator[tuple[Any, int, int]]:
    if keys.size == 0:
        return
    change = np.flatnonzero(np.diff(keys)) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [keys.size]])
    for s, e in zip(starts, ends):
        yield keys[s], int(s), int(e)


MAX_SIDECAR_BYTES = 256 << 20  # decompressed; a sidecar past this is ignored (a gzip bomb, not a capture)
SNIPPET_CONTEXT = 3  # lines shown either side of a location


def snippet_at(chunks: Optional[list[Any]], line: int) -> Optional[tuple[int, tuple[str, ...]]]:
    """The stored lines around `line`, from capture's chunks [(first_line, lines), ...]; None if not stored."""
    for first, lines in chunks or ():
        if first <= line < first + len(lines):
            lo = max(first, line - SNIPPET_CONTEXT)
            hi = min(first + len(lines), line + SNIPPET_CONTEXT + 1)
            return lo, lines[lo - first : hi - first]
    return None


def load_sidecar(path: Path, base_ns: int = 0) -> Optional[dict[str, Any]]:
    """Read a capture sidecar (see idlehound.capture) into {"callers": {(ts_ns, name): (file, line, func)},
    "code": UserCode, "sources": {file: [(first_line, lines), ...]}}; None when it cannot be read.

    The sidecar holds absolute start times; trace times count from the trace's baseTimeNanoseconds.
    Malformed entries are skipped: the sidecar only refines what the trace says.
    """
    from ..errors import TraceError
    from ..runfolder import read_json

    try:
        data = read_json(path, MAX_SIDECAR_BYTES)  # bounded decompression and nesting, as for run.json
    except TraceError:
        return None
    if not isinstance(data, dict):
        return None
    return {
        "callers": _callers(data.get("frames"), base_ns),
        "code": _user_code(data),
        "sources": _sources(data.get("sources")),
        "library_calls": _callers(data.get("library_calls"), base_ns),
        "points": _points(data.get("points"), base_ns),
        "library_sources": _sources(data.get("library_sources")),
        "sys_path": _strings(data.get("sys_path")),
        "script": _str(data.get("script")),
    }


def _callers(rows: Any, base_ns: int) -> dict[Any, Any]:
    callers = {}
    for r in rows if isinstance(rows, list) else ():
        if isinstance(r, list) and len(r) == 5 and _ints(r[0], r[3]) and _strs(r[1], r[2], r[4]):
            ts, name, file, line, func = r
            callers[(ts - base_ns, name)] = (file, line, func)
    return callers


def _points(rows: Any, base_ns: int) -> list[tuple[int, int, str, int, str]]:
    """(start, end, file, line, function) of each idle point (sidecar version 3), sorted by start."""
    out = []
    for r in rows if isinstance(rows, list) else ():
        if isinstance(r, list) and len(r) == 7 and _ints(r[0], r[1], r[4]) and _strs(r[2], r[3], r[5], r[6]):
            out.append((r[0] - base_ns, r[1] - base_ns, r[3], r[4], r[5]))
    return sorted(out)


def _user_code(data: dict[str, Any]) -> Optional[UserCode]:
    """What capture knew about the user's files (sidecar version 2); None for older sidecars."""
    files = data.get("files")
    files = {k: v for k, v in files.items() if isinstance(v, bool)} if isinstance(files, dict) else {}
    roots, prefixes = _strings(data.get("library_roots")), _strings(data.get("library_prefixes"))
    if not (files or roots or prefixes):
        return None
    return UserCode(files, roots, prefixes)


def _sources(raw: Any) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for file, chunks in raw.items() if isinstance(raw, dict) else ():
        good = (
            [
                (c[0], tuple(c[1]))
                for c in chunks
                if isinstance(c, list)
                and len(c) == 2
                and _ints(c[0])
                and isinstance(c[1], list)
                and _strs(*c[1])
            ]
            if isinstance(chunks, list)
            else []
        )
        if good:
            out[file] = good
    return out


def _ints(*xs: Any) -> bool:
    return all(isinstance(x, int) and not isinstance(x, bool) and abs(x) < 1 << 63 for x in xs)


def _strs(*xs: Any) -> bool:
    return all(isinstance(x, str) for x in xs)


def _str(x: Any) -> Optional[str]:
    return x if isinstance(x, str) else None


def _strings(xs: Any) -> list[str]:
    return [x for x in xs if isinstance(x, str)] if isinstance(xs, list) else []
