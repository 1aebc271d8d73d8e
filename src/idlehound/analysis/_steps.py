"""Steps: ProfilerStep# spans extended to the GPU work they launched; the measured device."""

from __future__ import annotations

import numpy as np

from ..trace import EventTable, Trace
from . import _intervals as iv
from . import _roles as roles
from ._context import _Context
from ._model import DeviceInfo, Step


def _steps(ev: EventTable, ctx: _Context, notes: list[str]) -> tuple[list[Step], str]:
    host = np.concatenate([ctx.annotations, ctx.cpu_ops])
    nums = {i: roles.step_number(ev.names[i]) for i in np.unique(ev.name[host])}
    marks = [j for j in host if nums[ev.name[j]] is not None]
    if not marks:
        lo, hi = _window(ev, ctx)
        notes.append("no ProfilerStep# markers: the whole trace is analysed as one step")
        steps = [Step(None, lo, hi, lo, hi)]
        return steps, "whole trace"
    seen, uniq = set(), []
    for j in sorted(marks, key=lambda j: ev.ts[j]):
        n = nums[ev.name[j]]
        if n not in seen:
            seen.add(n)
            uniq.append(j)
    steps = [Step(nums[ev.name[j]], int(ev.ts[j]), int(ev.ts[j] + ev.dur[j]),
                  int(ev.ts[j]), int(ev.ts[j] + ev.dur[j])) for j in uniq]
    _extend_to_gpu(ev, ctx, steps, notes)
    return steps, "ProfilerStep"


def _window(ev: EventTable, ctx: _Context) -> tuple[int, int]:
    idx = np.concatenate([ctx.x_cpu, ctx.gpu])
    if idx.size == 0:
        return 0, 0
    return int(ev.ts[idx].min()), int((ev.ts[idx] + ev.dur[idx]).max())


def _extend_to_gpu(ev: EventTable, ctx: _Context, steps: list[Step], notes: list[str]) -> None:
    """A step owns the GPU work its host part enqueued; steps never overlap."""
    hs = np.array([s.host_start_ns for s in steps])
    he = np.array([s.host_end_ns for s in steps])
    rt = ctx.runtime_of(ctx.gpu)
    ok = rt >= 0
    owner = np.full(ctx.gpu.shape, -1)
    t = ev.ts[rt[ok]]
    k = np.searchsorted(hs, t, side="right") - 1
    inside = (k >= 0) & (t < he[np.clip(k, 0, None)])
    owner[np.flatnonzero(ok)[inside]] = k[inside]
    gpu_end = np.full(len(steps), -1, dtype=np.int64)
    counted = np.zeros(len(steps), dtype=np.int64)
    sel = owner >= 0
    np.maximum.at(gpu_end, owner[sel], ev.ts[ctx.gpu[sel]] + ev.dur[ctx.gpu[sel]])
    np.add.at(counted, owner[sel], 1)
    prev_end = -(2**62)
    for i, s in enumerate(steps):
        s.start_ns = max(prev_end, s.host_start_ns)
        s.end_ns = max(s.host_end_ns, int(gpu_end[i]), s.start_ns)
        prev_end = s.end_ns
    if ctx.gpu.size and len(steps) > 1 and (counted[-1] == 0 and counted[:-1].mean() > 0
                                            or _cut_short(ev, ctx, steps[-1])):
        notes.append(f"dropped the last step (#{steps[-1].number}): the profiler stopped before its GPU work")
        steps.pop()
    _drop_backlog(ev, ctx, steps, owner, notes)


def _cut_short(ev: EventTable, ctx: _Context, s: Step) -> bool:
    """More than a tenth of the step's launches have no GPU op in the trace: the profiler stopped first."""
    la = ctx.launch[(ev.ts[ctx.launch] >= s.host_start_ns) & (ev.ts[ctx.launch] < s.host_end_ns)]
    return la.size > 0 and np.isin(ev.corr[la], ev.corr[ctx.gpu]).mean() < 0.9


BACKLOG_SHARE = 0.05  # GPU time of work queued before the window, as a share of the first step, that spoils it


def _drop_backlog(ev: EventTable, ctx: _Context, steps: list[Step], owner: np.ndarray, notes: list[str]) -> None:
    """The first step is not a whole step when the GPU spent part of it on work queued before the window."""
    if len(steps) < 2:
        return
    s = steps[0]
    orphan = ctx.gpu[owner < 0]
    lo = np.clip(ev.ts[orphan], s.start_ns, s.end_ns)
    hi = np.clip(ev.ts[orphan] + ev.dur[orphan], s.start_ns, s.end_ns)
    backlog = iv.total(iv.union(lo, hi))
    if backlog > BACKLOG_SHARE * max(s.duration_ns, 1):
        notes.append(f"left out the first step (#{s.number}): {backlog / 1e6:.2f} ms of its GPU time ran work "
                     "queued before the profiled window (the host runs ahead of the GPU)")
        steps.pop(0)


def _device(trace: Trace, ctx: _Context) -> DeviceInfo:
    ev = trace.events
    pids = ev.pid[ctx.gpu]
    seen = sorted(int(p) for p in np.unique(pids))
    info = DeviceInfo(devices_seen=seen)
    if seen:
        busy = {p: int(ev.dur[ctx.gpu][pids == p].sum()) for p in seen}
        info.index = max(busy, key=busy.get)
    props = trace.device_properties
    p = next((d for d in props if d.get("id") == info.index), props[0] if props else None)
    if p:
        info.name = str(p.get("name", ""))
        if isinstance(p.get("computeMajor"), int):
            info.compute_capability = (p["computeMajor"], int(p.get("computeMinor", 0) or 0))
        if isinstance(p.get("totalGlobalMem"), (int, float)):
            info.memory_bytes = float(p["totalGlobalMem"])
        if isinstance(p.get("numSms"), int):
            info.num_sms = p["numSms"]
    return info
