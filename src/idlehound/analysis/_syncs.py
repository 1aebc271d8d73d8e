"""Blocking host calls, grouped by the user call and line that made them."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import _intervals as iv
from . import _roles as roles
from ._context import _Context
from ._gaps import _Gaps
from ._model import Step, SyncSite
from ._source import SourceMap, parse_frame

_OWN_FRAMES = ("idlehound/capture/", "torch/profiler/")  # the profiler's own syncs, not the user's


def _sync_sites(
    ctx: _Context, smap: SourceMap, gaps: Optional[_Gaps], s0: np.ndarray, s1: np.ndarray, steps: list[Step]
) -> list[SyncSite]:
    ev = ctx.ev
    sync = ctx.sync
    sync = sync[iv.owner(ev.ts[sync], s0, s1) >= 0]
    if sync.size == 0:
        return []
    step_of = iv.owner(ev.ts[sync], s0, s1)
    idle = gaps.idle_after(sync) if gaps else np.zeros(sync.shape, np.int64)
    ops = ctx.op_of_ext(ev.ext[sync])
    copies = _copy_name_by_ext(ctx)
    locs = smap.locate(ev.tid[sync], ev.ts[sync])
    frames = smap.call_frame(ev.tid[sync], ev.ts[sync])
    sites: dict[tuple[Any, ...], SyncSite] = {}
    for k, j in enumerate(sync):
        call = ev.names[ev.name[j]]
        op = ev.names[ev.name[ops[k]]] if ops[k] >= 0 else ""
        kind = roles.sync_kind(call, op, copies.get(int(ev.ext[j]), ""))
        # Group by the call the user wrote (print, .item(), .cpu()), not by the ops inside it.
        py = _clean_py(
            smap.name(frames[k])
            if frames[k] >= 0
            else smap.innermost_name(int(ev.tid[j]), int(ev.ts[j])) or ""
        )
        if smap.within(int(ev.tid[j]), int(ev.ts[j]), _OWN_FRAMES):
            continue  # the profiler's own syncs (window start/stop), not the user's
        steps[step_of[k]].sync_calls += 1
        parsed = parse_frame(py)
        if parsed and smap.is_user(parsed[0]):
            py = ""  # the op sits directly in user code, e.g. `if loss > 0:`
        if any(w in py for w in ("print", "__repr__", "__format__", "__str__", "_tensor_str")):
            kind = "print_tensor"
        key = (py, locs[k]) if py else (kind, op, call, locs[k])
        site = sites.setdefault(key, SyncSite(kind, op, call, locs[k], py))
        site.count += 1
        site.idle_after_ns += int(idle[k])
        site.blocked_ns += int(ev.dur[j])
    return sorted(sites.values(), key=lambda s: (-s.idle_after_ns, -s.count))


def _clean_py(name: str) -> str:
    i = name.find(" at 0x")
    return name[:i] + ">" if i > 0 and name.endswith(">") else name


def _copy_name_by_ext(ctx: _Context) -> dict[int, str]:
    """External id of the op -> name of the GPU memcpy it issued."""
    ev = ctx.ev
    mc = ctx.gpu[np.isin(ev.cat[ctx.gpu], [ev.cat_id("gpu_memcpy"), ev.cat_id("Memcpy")])]
    rt = ctx.runtime_of(mc)
    out: dict[int, str] = {}
    for g, r in zip(mc, rt):
        ext = int(ev.ext[r]) if r >= 0 else int(ev.ext[g])
        if ext != -1:
            out.setdefault(ext, ev.names[ev.name[g]])
    return out
