"""Steps: ProfilerStep# spans extended to the GPU work they launched; the measured device."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..metrics import MAX_EVENT_NS
from ..trace import EventTable, Trace
from . import _intervals as iv
from . import _roles as roles
from . import _validate as validate
from ._context import _Context
from ._model import DeviceInfo, Step


def _steps(ev: EventTable, ctx: _Context, notes: list[str]) -> tuple[list[Step], str]:
    host = np.concatenate([ctx.annotations, ctx.cpu_ops])
    nums = {i: roles.step_number(ev.names[i]) for i in np.unique(ev.name[host])}
    marks = host[np.isin(ev.name[host], [i for i, n in nums.items() if n is not None])].tolist()
    odd = sum(
        1
        for i, n in nums.items()
        if n is None and ev.names[i].startswith("ProfilerStep#") and validate.step_number(ev.names[i]) is None
    )
    if odd:
        notes.append(f"ignored {odd} ProfilerStep# marker name(s) with a step number of more than 18 digits")
    if not marks:
        lo, hi = _window(ev, ctx, notes=notes)
        notes.append("no ProfilerStep# markers: the whole trace is analysed as one step")
        steps = [Step(None, lo, hi, lo, hi)]
        return steps, "whole trace"
    seen, uniq = set(), []
    for j in sorted(marks, key=lambda j: ev.ts[j]):
        n = nums[ev.name[j]]
        if n not in seen:
            seen.add(n)
            uniq.append(j)
    uniq = _within_trace(ev, ctx, uniq, np.asarray(marks), notes)
    if not uniq:
        lo, hi = _window(ev, ctx, exclude=np.asarray(marks), notes=notes)
        return [Step(None, lo, hi, lo, hi)], "whole trace"
    steps = [
        Step(
            nums[ev.name[j]],
            int(ev.ts[j]),
            int(ev.ts[j] + ev.dur[j]),
            int(ev.ts[j]),
            int(ev.ts[j] + ev.dur[j]),
        )
        for j in uniq
    ]
    _extend_to_gpu(ev, ctx, steps, notes)
    return steps, "ProfilerStep"


def _within_trace(
    ev: EventTable, ctx: _Context, uniq: list[Any], marks: np.ndarray, notes: list[str]
) -> list[Any]:
    """Drop step markers that end after the profiler's recording window: a step cannot outlast its trace."""
    end = _window_end(ev)
    if end is None:
        return uniq
    bad = [j for j in uniq if ev.ts[j] + ev.dur[j] > end + WINDOW_SLACK_NS]
    for j in bad:
        notes.append(
            f"ignored {ev.name_of(j)}: it lasts {ev.dur[j] / 1e6:.2f} ms and ends "
            f"{(ev.ts[j] + ev.dur[j] - end) / 1e6:.2f} ms after the profiler stopped recording "
            "(a broken step marker)"
        )
    if bad and len(bad) == len(uniq):
        notes.append("no usable ProfilerStep# markers: the whole trace is analysed as one step")
    return [j for j in uniq if j not in bad]


WINDOW_SLACK_NS = 1_000_000


def _window_end(ev: EventTable) -> Optional[int]:
    """End of Kineto's recording window: the `PyTorch Profiler` span or the `Record Window End` instant."""
    span = ev.mask_cat("Trace") & ev.mask_names(lambda n: n.startswith("PyTorch Profiler"))
    mark = (ev.ph == 1) & ev.mask_names(lambda n: n == "Record Window End")
    ends = np.concatenate([ev.ts[span] + ev.dur[span], ev.ts[mark]])
    return int(ends.max()) if ends.size else None


def _window(
    ev: EventTable,
    ctx: _Context,
    exclude: np.ndarray = np.zeros(0, np.int64),
    notes: Optional[list[str]] = None,
) -> tuple[int, int]:
    """Start and end of the host and GPU events (the whole trace as one step). A step cannot last more than a
    day, as no event can (validate.durations): past that, the day that starts the most events is kept."""
    m = np.zeros(len(ev), bool)  # a mask, not a merged index list: 1 byte an event, not 3 sorted copies of 8
    m[ctx.x_cpu] = True
    m[ctx.gpu] = True
    m[exclude] = False
    if not m.any():
        return 0, 0
    lo, hi = _span(ev, m)
    if hi - lo <= MAX_EVENT_NS:
        return lo, hi
    day = _busiest_day(ev.ts[m])
    inside = (ev.ts >= day) & (ev.ts <= day + MAX_EVENT_NS)
    if notes is not None:
        notes.append(
            f"excluded {int((m & ~inside).sum())} event(s) more than a day away from the rest of the trace "
            "(impossible in a profile) from the whole-trace step"
        )
    lo, hi = _span(ev, m & inside)
    return lo, min(hi, lo + MAX_EVENT_NS)


def _busiest_day(ts: np.ndarray) -> int:
    """The start of the day-long window that holds the most of these start times."""
    t = np.sort(ts)
    counts = np.searchsorted(t, t + MAX_EVENT_NS, side="right") - np.arange(t.size)
    return int(t[int(np.argmax(counts))])


def _span(ev: EventTable, m: np.ndarray) -> tuple[int, int]:
    """First start and last end of the events m marks (some)."""
    lo: int | None = None
    hi = 0
    for a in range(0, len(ev), _CHUNK):  # start and end of the chosen events, a chunk at a time
        sel = np.flatnonzero(m[a : a + _CHUNK]) + a
        if sel.size:
            ts = ev.ts[sel]
            c_lo, c_hi = int(ts.min()), int((ts + ev.dur[sel]).max())
            lo, hi = (c_lo, c_hi) if lo is None else (min(lo, c_lo), max(hi, c_hi))
    assert lo is not None  # m.any(): some chunk held a chosen event
    return lo, hi


_CHUNK = 2**20


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
    # GPU work ending more than a day after its step began is no more the step's than an event lasts a day
    g = ctx.gpu[ok]
    far = inside & (ev.ts[g] + ev.dur[g] - hs[np.clip(k, 0, None)] > MAX_EVENT_NS)
    if far.any():
        notes.append(
            f"excluded {int(far.sum())} GPU op(s) ending more than a day after the step that launched them "
            "(impossible in a profile) from their steps"
        )
        inside &= ~far
    owner[np.flatnonzero(ok)[inside]] = k[inside]
    gpu_end = np.full(len(steps), np.iinfo(np.int64).min, dtype=np.int64)  # none: times may be negative
    counted = np.zeros(len(steps), dtype=np.int64)
    sel = owner >= 0
    np.maximum.at(gpu_end, owner[sel], ev.ts[ctx.gpu[sel]] + ev.dur[ctx.gpu[sel]])
    np.add.at(counted, owner[sel], 1)
    prev_end = -(2**63)  # below any time (-9e15 µs is -9e18 ns: a step marker there is its own length)
    for i, s in enumerate(steps):
        s.start_ns = max(prev_end, s.host_start_ns)
        s.end_ns = max(s.host_end_ns, int(gpu_end[i]), s.start_ns)
        prev_end = s.end_ns
    if (
        ctx.gpu.size
        and len(steps) > 1
        and (counted[-1] == 0 and counted[:-1].mean() > 0 or _cut_short(ev, ctx, steps[-1]))
    ):
        notes.append(f"dropped the last step (#{steps[-1].number}): the profiler stopped before its GPU work")
        steps.pop()
    _drop_backlog(ev, ctx, steps, owner, notes)
    _drop_new_pass(ev, ctx, steps, notes)


def _cut_short(ev: EventTable, ctx: _Context, s: Step) -> bool:
    """More than a tenth of the step's launches have no GPU op in the trace: the profiler stopped first."""
    la = ctx.launch[(ev.ts[ctx.launch] >= s.host_start_ns) & (ev.ts[ctx.launch] < s.host_end_ns)]
    return bool(la.size > 0 and np.isin(ev.corr[la], ev.corr[ctx.gpu]).mean() < 0.9)


BACKLOG_SHARE = (
    0.05  # GPU time of work queued before the window, as a share of the first step, that spoils it
)


NEW_PASS_RATIO = (
    4.0  # a step this many times the median of the others, which starts a loader pass, is left out
)
MIN_STEPS_FOR_OUTLIER = 4


def _drop_new_pass(ev: EventTable, ctx: _Context, steps: list[Step], notes: list[str]) -> None:
    """A step that starts a new pass over a DataLoader (an epoch boundary, or an evaluation loop between
    training steps) and runs many times longer than the others is not a training step: leave it out of the mean.
    Only with Python stacks recorded, where the loader's __iter__ shows; the evidence is named in a note."""
    if len(steps) < MIN_STEPS_FOR_OUTLIER or ctx.python.size == 0:
        return
    starts = ctx.python[np.isin(ev.name[ctx.python], ev.name_ids(_is_loader_iter))]
    if starts.size == 0:
        return
    durations = np.array([s.duration_ns for s in steps], dtype=np.float64)
    for i in sorted(range(len(steps)), reverse=True):
        s, others = steps[i], np.delete(durations, i)
        typical = float(np.median(others))
        new_pass = np.any((ev.ts[starts] >= s.host_start_ns) & (ev.ts[starts] < s.host_end_ns))
        if typical > 0 and durations[i] > NEW_PASS_RATIO * typical and new_pass:
            notes.append(
                f"left out step #{s.number} ({durations[i] / 1e6:.2f} ms against a typical "
                f"{typical / 1e6:.2f} ms): it starts a new pass over a DataLoader (an epoch boundary or an "
                "evaluation loop), which is no training step"
            )
            steps.pop(i)
            durations = np.delete(durations, i)


def _is_loader_iter(name: str) -> bool:
    """The Python event of `iter(loader)`: torch/utils/data/dataloader.py(N): __iter__."""
    return name.startswith("torch/utils/data/dataloader.py(") and name.endswith("): __iter__")


def _drop_backlog(
    ev: EventTable, ctx: _Context, steps: list[Step], owner: np.ndarray, notes: list[str]
) -> None:
    """The first step is not a whole step when the GPU spent part of it on work queued before the window."""
    if len(steps) < 2:
        return
    s = steps[0]
    orphan = ctx.gpu[owner < 0]
    lo = np.clip(ev.ts[orphan], s.start_ns, s.end_ns)
    hi = np.clip(ev.ts[orphan] + ev.dur[orphan], s.start_ns, s.end_ns)
    backlog = iv.total(iv.union(lo, hi))
    if backlog > BACKLOG_SHARE * max(s.duration_ns, 1):
        notes.append(
            f"left out the first step (#{s.number}): {backlog / 1e6:.2f} ms of its GPU time ran work "
            "queued before the profiled window (the host runs ahead of the GPU)"
        )
        steps.pop(0)


def _device(trace: Trace, ctx: _Context) -> DeviceInfo:
    ev = trace.events
    pids = ev.pid[ctx.gpu]
    seen = sorted(int(p) for p in np.unique(pids))
    info = DeviceInfo(devices_seen=seen)
    if seen:
        busy = {p: float(ev.dur[ctx.gpu][pids == p].sum(dtype=np.float64)) for p in seen}
        info.index = max(busy, key=lambda p: busy[p])
    props = trace.device_properties
    p = next((d for d in props if d.get("id") == info.index), props[0] if props else None)
    info.accelerator, info.unmeasured = _accelerator(ev, ctx)
    if not seen and info.unmeasured:
        p = next((d for d in props if "computeMajor" not in d), None)  # MTIA and others list their own fields
    if p:
        info.name = str(p.get("name", ""))[:200]
        # values out of any real device's range are left unknown
        if validate.device_value(p.get("computeMajor"), 1, 100) and isinstance(p["computeMajor"], int):
            minor = p.get("computeMinor", 0) or 0
            info.compute_capability = (
                p["computeMajor"],
                minor if validate.device_value(minor, 0, 100) and isinstance(minor, int) else 0,
            )
        if validate.device_value(
            p.get("totalGlobalMem"), validate.MIN_DEVICE_MEMORY, validate.MAX_MEMORY_BYTES
        ):
            info.memory_bytes = float(p["totalGlobalMem"])
        if validate.device_value(p.get("numSms"), 1, 100_000) and isinstance(p["numSms"], int):
            info.num_sms = p["numSms"]
    if not info.name and seen:
        info.name = f"GPU {info.index} (the trace has no deviceProperties)"
    elif not info.name and info.unmeasured:
        info.name = info.accelerator
    return info


# Kineto categories of accelerators other than CUDA/ROCm GPUs (ActivityType.h), by prefix.
_OTHER_DEVICES = {
    "mtia_": "MTIA",
    "xpu_": "XPU",
    "hpu_": "HPU",
    "privateuse1_": "PrivateUse1",
    "glow_": "Glow",
}


def _accelerator(ev: EventTable, ctx: _Context) -> tuple[str, dict[str, int]]:
    """Which device the trace shows: CUDA or ROCm GPU events, or another accelerator's event categories."""
    other = {}
    for i, cat in sorted(enumerate(ev.cats), key=lambda x: x[1]):
        kind = next((k for pre, k in _OTHER_DEVICES.items() if cat.startswith(pre)), "")
        if kind:
            other[cat] = (kind, int((ev.cat == i).sum()))
    if ctx.gpu.size:
        hip = ctx.runtime.size and bool(ev.mask_names(lambda n: n.startswith("hip"))[ctx.runtime].any())
        return ("ROCm" if hip else "CUDA"), {c: n for c, (_, n) in other.items()}
    if other:
        kinds = sorted({k for k, _ in other.values()})
        return "/".join(kinds), {c: n for c, (_, n) in other.items()}
    return "", {}
