"""Name the framework behind a sync point, and phrase the fix as that framework's own setting.

Sync points are the host reads of device values found in the trace: the scalar-read and data-dependent-shape
ops (aten::_local_scalar_dense behind .item(), `if tensor:`, formatting; aten::nonzero...) and the blocking
runtime calls; and the collectives (c10d::allreduce_, c10d::barrier...), where every rank waits. On a GPU each of these makes the host wait for the GPU; on a CPU trace the same ops are there,
so a CPU run already shows where a GPU run will wait. The python_function stack above each point is matched
against the table in frameworks_table.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ..analysis import Analysis, SourceLoc, SourceMap
from ..analysis import _roles as roles
from ..analysis._source import parse_frame
from ._finding import Finding
from .frameworks_table import ENTRIES, FrameworkEntry

# Collectives as the calling thread records them (gloo and NCCL alike): a per-step one is a wait for every rank.
_COLLECTIVES = ("c10d::allreduce_", "c10d::barrier", "c10d::allgather", "c10d::_allgather_base", "c10d::broadcast_")
_OWN_FRAMES = ("idlehound/capture/", "torch/profiler/")  # the profiler's own syncs (window start/stop)


@dataclass
class FrameworkMatch:
    entry: FrameworkEntry
    count: int
    library: tuple[str, int, str]  # file, line (the function's def line from the trace), function
    user: Optional[SourceLoc]

    def library_str(self) -> str:
        file, line, func = self.library
        return f"{file}:{line} ({func}, def line)"

    def to_json(self, n_steps: int) -> dict[str, Any]:
        file, line, func = self.library
        return {"entry": self.entry.name, "framework": self.entry.framework, "title": self.entry.title,
                "library": {"file": file, "line": line, "function": func, "exact": False},
                "user": self.user.to_json() if self.user else None,
                "count_per_step": self.count / max(n_steps, 1), "fix": self.entry.fix, "code": self.entry.code}


def match_stack(stack: list[str], entries: tuple[FrameworkEntry, ...] = ENTRIES
                ) -> Optional[tuple[FrameworkEntry, tuple[str, int, str]]]:
    """The first entry whose frames appear in `stack` (python_function names, innermost first), with the
    library frame that matched; None when no entry does."""
    parsed = [p for p in (parse_frame(n) for n in stack) if p is not None]
    library = [p for p in parsed if not p[0].startswith(("torch/", "<"))]
    for e in entries:
        candidates = library[:1] if e.innermost else parsed
        for p in candidates:
            if any(p[0].endswith(suffix) and p[2] in funcs for suffix, funcs in e.frames):
                return e, p
    return None


def sync_stacks(a: Analysis) -> tuple[SourceMap, list[tuple[int, int, int]]]:
    """(tid, ts, innermost python frame) of each host read of a device value or collective in the steps."""
    ev = a.trace.events
    is_point = ev.mask_names(lambda n: roles.sync_kind("", n, "") in ("scalar_read", "data_dependent_shape")
                             or roles.is_sync_call(n) or n.startswith(_COLLECTIVES))
    cats = [ev.cat_id(c) for c in roles.CPU_OP_CATS + roles.RUNTIME_CATS]
    idx = np.flatnonzero(is_point & np.isin(ev.cat, [c for c in cats if c >= 0]))
    if a.steps and idx.size:
        inside = np.zeros(idx.size, dtype=bool)
        for s in a.steps:
            inside |= (ev.ts[idx] >= s.start_ns) & (ev.ts[idx] < s.end_ns)
        idx = idx[inside]
    idx = _outermost(ev, idx)
    smap = SourceMap(ev, _sidecar(a))
    frames = smap.innermost(ev.tid[idx], ev.ts[idx]) if idx.size else np.zeros(0, np.int64)
    return smap, [(int(ev.tid[j]), int(ev.ts[j]), int(k)) for j, k in zip(idx, frames) if k >= 0]


def _sidecar(a: Analysis) -> Optional[dict[str, Any]]:
    """The capture sidecar beside the trace (exact user lines), as the pipeline loads it; None without one."""
    from ..analysis import load_sidecar
    from ..pipeline import sidecar_path

    path = sidecar_path(a.trace.path)
    base = a.trace.metadata.get("baseTimeNanoseconds")
    return load_sidecar(path, int(base) if isinstance(base, (int, float)) else 0) if path.exists() else None


def _outermost(ev: Any, idx: np.ndarray) -> np.ndarray:
    """One point per host read: is_nonzero > item > _local_scalar_dense > cudaStreamSynchronize nest."""
    order = idx[np.lexsort((-ev.dur[idx], ev.ts[idx], ev.tid[idx]))]
    keep, tid, end = [], None, -1
    for j in order:
        if ev.tid[j] != tid or ev.ts[j] >= end:
            keep.append(j)
            tid, end = ev.tid[j], int(ev.ts[j] + ev.dur[j])
    return np.array(keep, dtype=np.int64)


def find_matches(a: Analysis) -> list[FrameworkMatch]:
    """Sync points whose stack matches a framework entry, grouped by entry and library frame, most first."""
    smap, points = sync_stacks(a)
    out: dict[tuple[str, tuple[str, int, str]], FrameworkMatch] = {}
    for tid, ts, k in points:
        if smap.within(tid, ts, _OWN_FRAMES):  # only frames below the user's code: `idlehound run` is above it
            continue
        stack = _stack(smap, k)
        hit = match_stack(stack)
        if hit is None:
            continue
        entry, lib = hit
        m = out.get((entry.name, lib))
        if m is None:
            user = smap.locate(np.array([tid]), np.array([ts]))[0]
            m = out[(entry.name, lib)] = FrameworkMatch(entry, 0, lib, user)
        m.count += 1
    return sorted(out.values(), key=lambda m: -m.count)


def _stack(smap: SourceMap, k: int) -> list[str]:
    out: list[str] = []
    while k >= 0 and len(out) < 200:
        out.append(smap.name(k))
        k = int(smap.parent[k])
    return out


def annotate(a: Analysis, findings: list[Finding]) -> list[Finding]:
    """Phrase the sync finding's fix as the framework's setting when a framework caused the syncs.

    Without a GPU timeline there is no sync finding (nothing idles): a matched framework source is then
    reported as a risk, since on a GPU the same reads wait for it. Where nothing matches, findings are unchanged.
    """
    try:
        matches = find_matches(a) if a.trace.with_stack else []
    except Exception:  # a best-effort refinement: never lose the generic findings over it
        matches = []
    if not matches:
        return findings
    top = matches[0]
    lines = [f"{m.library_str()}: {m.entry.title}, {m.count / a.n_steps:.1f}/step"
             + (f", reached from {m.user}" if m.user else "") for m in matches[:4]]
    details = [m.to_json(a.n_steps) for m in matches]
    sync = next((f for f in findings if f.cause == "sync"), None)
    if sync is not None:
        sync.details.update(framework=details, generic_fix={"fix": sync.fix, "code": sync.code})
        sync.evidence.extend(lines)
        sync.title = f"{sync.title}: {top.entry.title}"
        sync.fix, sync.code = top.entry.fix, top.entry.code
        return findings
    if a.gpu_recorded:
        return findings  # the GPU did not wait on these reads long enough to matter
    risk = Finding("framework_sync", f"On a GPU this would wait: {top.entry.title}", 0.0, a.step_ms,
                   ["no GPU timeline in this trace: these host reads of tensor values (and collectives) make the "
                    "host wait for the GPU once it runs on one"] + lines, top.entry.fix, top.entry.code, location=top.user,
                   severity="medium", kind="risk", details={"framework": details})
    return [*findings, risk]
