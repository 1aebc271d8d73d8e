"""Name the framework behind a sync point: match the Python stack above each host wait against the entries.

Sync points are the host reads of device values found in the trace: the scalar-read and data-dependent-shape
ops (aten::_local_scalar_dense behind .item(), `if tensor:`, formatting; aten::nonzero...) and the blocking
runtime calls; and the collectives (c10d::allreduce_, c10d::barrier...), where every rank waits. On a GPU each of these makes the host wait for the GPU; on a CPU trace the same ops are there,
so a CPU run already shows where a GPU run will wait. The python_function stack above each point is matched
against the entries of the framework modules beside this one.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ...analysis import Analysis, SourceLoc, SourceMap, parse_frame, roles
from ._table import FrameworkEntry

_OWN_FRAMES = ("idlehound/capture/", "torch/profiler/")  # the profiler's own syncs (window start/stop)
EVIDENCE_MATCHES = 4  # framework matches named in the evidence (all are in details)


@dataclass
class FrameworkMatch:
    entry: FrameworkEntry
    count: int
    library: SourceLoc  # the line inside the matched library function (its def line where capture kept none)
    user: Optional[SourceLoc]
    blocking: Optional[SourceLoc] = None  # the innermost library line the host waited in, when it differs

    def library_str(self) -> str:
        out = _where(self.library)
        if self.blocking is not None:
            out += f", blocking in {_where(self.blocking)}"
        return out

    def to_json(self, n_steps: int) -> dict[str, Any]:
        return {
            "entry": self.entry.name,
            "framework": self.entry.framework,
            "title": self.entry.title,
            "library": _loc_json(self.library),
            "blocking": _loc_json(self.blocking) if self.blocking else None,
            "user": self.user.to_json() if self.user else None,
            "count_per_step": self.count / max(n_steps, 1),
            "fix": self.entry.fix,
            "code": self.entry.code,
        }


def source_text(loc: SourceLoc) -> Optional[str]:
    """The text of loc's own line, as capture stored it (None when it stored none)."""
    if loc.snippet is None:
        return None
    first, lines = loc.snippet
    return lines[loc.line - first].strip() if 0 <= loc.line - first < len(lines) else None


def _where(loc: SourceLoc) -> str:
    text = source_text(loc) if loc.exact else None
    return f"{loc.file}:{loc.line}" + (
        f" `{text}`" if text else "" if loc.exact else f" ({loc.function}, def line)"
    )


def _loc_json(loc: SourceLoc) -> dict[str, Any]:
    return {**loc.to_json(), "source": source_text(loc) if loc.exact else None}


def match_stack(
    stack: list[str], entries: tuple[FrameworkEntry, ...]
) -> Optional[tuple[FrameworkEntry, tuple[str, int, str]]]:
    """The first entry whose frames appear in `stack` (python_function names, innermost first), with the
    library frame that matched; None when no entry does."""
    hit = _match(stack, entries)
    frame = parse_frame(stack[hit[1]]) if hit is not None else None  # _match returns a frame that parses
    return None if hit is None or frame is None else (hit[0], frame)


def _match(stack: list[str], entries: tuple[FrameworkEntry, ...]) -> Optional[tuple[FrameworkEntry, int]]:
    """(entry, index in stack of the frame that matched), or None."""
    parsed = [(i, p) for i, p in ((i, parse_frame(n)) for i, n in enumerate(stack)) if p is not None]
    library = [(i, p) for i, p in parsed if not p[0].startswith(("torch/", "<"))]
    for e in entries:
        candidates = library[:1] if e.innermost else parsed
        for i, p in candidates:
            if any(p[0].endswith(suffix) and p[2] in funcs for suffix, funcs in e.frames):
                return e, i
    return None


def sync_stacks(a: Analysis) -> tuple[SourceMap, list[tuple[int, int, int]]]:
    """(tid, ts, innermost python frame) of each host read of a device value or collective in the steps."""
    ev = a.trace.events
    is_point = ev.mask_names(roles.is_host_wait)
    cats = [ev.cat_id(c) for c in roles.CPU_OP_CATS + roles.RUNTIME_CATS]
    idx = np.flatnonzero(is_point & np.isin(ev.cat, [c for c in cats if c >= 0]))
    if a.steps and idx.size:
        inside = np.zeros(idx.size, dtype=bool)
        for s in a.steps:
            inside |= (ev.ts[idx] >= s.start_ns) & (ev.ts[idx] < s.end_ns)
        idx = idx[inside]
    idx = _outermost(ev, idx)
    # built by analyze() with the sidecar the pipeline loaded (none where the run folder has none)
    smap = a.source_map if a.source_map is not None else SourceMap(ev, None)
    frames = smap.innermost(ev.tid[idx], ev.ts[idx]) if idx.size else np.zeros(0, np.int64)
    return smap, [(int(ev.tid[j]), int(ev.ts[j]), int(k)) for j, k in zip(idx, frames) if k >= 0]


def _outermost(ev: Any, idx: np.ndarray) -> np.ndarray:
    """One point per host read: is_nonzero > item > _local_scalar_dense > cudaStreamSynchronize nest."""
    order = idx[np.lexsort((-ev.dur[idx], ev.ts[idx], ev.tid[idx]))]
    keep, tid, end = [], None, -1
    for j in order:
        if ev.tid[j] != tid or ev.ts[j] >= end:
            keep.append(j)
            tid, end = ev.tid[j], int(ev.ts[j] + ev.dur[j])
    return np.array(keep, dtype=np.int64)


def find_matches(a: Analysis, entries: tuple[FrameworkEntry, ...]) -> list[FrameworkMatch]:
    """Sync points whose stack matches a framework entry, grouped by entry and library function, most first.

    Each group names the line its reads most often ran at (exact where capture recorded the stack).
    """
    smap, points = sync_stacks(a)
    out: dict[tuple[str, str, int, str], FrameworkMatch] = {}
    lines: dict[tuple[str, str, int, str], Counter[tuple[SourceLoc, Optional[SourceLoc]]]] = {}
    for tid, ts, _ in points:
        if smap.within(
            tid, ts, _OWN_FRAMES
        ):  # only frames below the user's code: `idlehound run` is above it
            continue
        path = smap.path(tid, ts)
        hit = _match([smap.name(k) for k in path], entries)
        if hit is None:
            continue
        entry, i = hit
        file, line, func = parse_frame(smap.name(path[i])) or ("", 0, "")  # _match parsed it already
        key = (entry.name, file, line, func)
        lib = smap.line_inside(path, i, ts) or SourceLoc(file, line, func, False)
        blocking = smap.library_line(tid, ts)
        if key not in out:
            user = smap.locate(np.array([tid]), np.array([ts]))[0]
            out[key] = FrameworkMatch(entry, 0, lib, user)
            lines[key] = Counter()
        out[key].count += 1
        lines[key][(lib, blocking if blocking != lib else None)] += 1
    for key, m in out.items():
        m.library, m.blocking = lines[key].most_common(1)[0][0]
        m.user = _set_at(smap, m.entry) or m.user
    return sorted(out.values(), key=lambda m: -m.count)


def _set_at(smap: SourceMap, entry: FrameworkEntry) -> Optional[SourceLoc]:
    """The user's line most often calling the library function that sets the source up (`self.log(...)`),
    exact where capture kept the call's line; None when the entry has none or no such call was recorded."""
    if not entry.set_at:
        return None
    funcs = tuple(f"): {f}" for _, names in entry.set_at for f in names)
    found: Counter[SourceLoc] = Counter()
    for tid, (lo, hi) in smap.threads.items():
        for k in range(lo, hi):
            name = smap.name(k)
            if not name.endswith(funcs):
                continue
            frame = parse_frame(name)
            if frame and any(frame[0].endswith(suf) and frame[2] in fs for suf, fs in entry.set_at):
                loc = smap.locate(np.array([tid]), np.array([int(smap.start[k])]))[0]
                if loc is not None:
                    found[loc] += 1
    return found.most_common(1)[0][0] if found else None
