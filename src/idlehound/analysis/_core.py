"""analyze(): steps, busy/idle, breakdown, idle gaps by cause, syncs, copies, kernels, memory."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from ..errors import TraceError
from ..trace import Trace
from . import _intervals as iv
from . import _observer as observer
from . import _validate as validate
from ._breakdown import _breakdown
from ._context import _Context
from ._gaps import _Gaps, _main_thread
from ._model import (
    BREAKDOWN,
    IDLE_CAUSES,
    CopyStats,
    DataLoaderStats,
    DeviceInfo,
    IdleLine,
    KernelStats,
    MemoryStats,
    Step,
    SyncSite,
)
from ._replay import Replay
from ._replay_events import launching_spans, sync_groups
from ._source import SourceLoc, SourceMap
from ._stats import _copies, _dataloader, _kernels, _memory
from ._steps import _device, _steps
from ._syncs import _OWN_FRAMES, _copy_name_by_ext, _sync_sites


@dataclass
class Analysis:
    """Everything idlehound measured in one trace. Times are ns unless a name says otherwise."""

    trace: Trace
    steps: list[Step]
    step_source: str  # "ProfilerStep" or "whole trace"
    device: DeviceInfo
    gpu_recorded: bool
    breakdown_ns: dict[str, int]
    idle_ns: dict[str, int]
    sync_sites: list[SyncSite]
    idle_lines: list[IdleLine]
    copies: dict[str, CopyStats]
    kernels: KernelStats
    memory: MemoryStats
    dataloader: DataLoaderStats
    gap_count: int
    notes: list[str] = field(default_factory=list)
    run_info: dict[str, Any] = field(default_factory=dict)
    timeline: dict[str, Any] = field(default_factory=dict)  # busy spans and idle gaps of the first steps
    ranks: dict[str, Any] = field(
        default_factory=dict
    )  # communication and per-line time, for multi-rank runs
    replay: Optional[Replay] = None  # the steps' dependency model (None without GPU events)
    observer: dict[str, Any] = field(default_factory=dict)  # unprofiled step, host rate fitted to it
    idle_library_lines: list[IdleLine] = field(default_factory=list)  # by the innermost library line instead
    source_map: Optional[SourceMap] = field(default=None, repr=False, compare=False)  # for the rules
    had_sidecar: bool = False  # the source map was built with the capture's sidecar
    gaps: Optional[_Gaps] = field(default=None, repr=False, compare=False)  # every idle gap (idle_gaps())

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    @property
    def window_ns(self) -> int:
        return sum(s.duration_ns for s in self.steps)

    @property
    def busy_ns(self) -> int:
        return sum(s.gpu_busy_ns for s in self.steps)

    @property
    def step_ms(self) -> float:
        return self.window_ns / max(self.n_steps, 1) / 1e6

    @property
    def gpu_busy_pct(self) -> Optional[float]:
        if not self.gpu_recorded or self.window_ns == 0:
            return None
        return 100.0 * self.busy_ns / self.window_ns

    def per_step_ms(self, ns: float) -> float:
        return ns / max(self.n_steps, 1) / 1e6


def analyze(
    trace: Trace,
    sidecar: Optional[dict[str, Any]] = None,
    step: Optional[int] = None,
    run_info: Optional[dict[str, Any]] = None,
    extra_notes: Sequence[str] = (),
) -> Analysis:
    """Measure where every step's time went and why the GPU idled. See docs/metrics.md. `extra_notes`: the caller's
    own (what it could not read of the run folder), listed after the analysis's."""
    validate.durations(trace)
    ev = trace.events
    ctx = _Context(ev)
    notes: list[str] = list(trace.warnings)
    steps, source = _chosen_steps(trace, ctx, step, notes)
    device = _device(trace, ctx)
    gpu_recorded = ctx.gpu.size > 0
    notes += _device_notes(trace, device, gpu_recorded)
    busy = ctx.busy_set(device.index)
    win_s = np.array([s.start_ns for s in steps], np.int64)
    win_e = np.array([s.end_ns for s in steps], np.int64)
    for s, b in zip(steps, iv.measure_in(busy, win_s, win_e)):
        s.gpu_busy_ns = int(b)
    _breakdown(ctx, steps, device.index)
    smap = SourceMap(ev, sidecar)
    gaps = _Gaps(ctx, steps, busy, smap) if gpu_recorded else None
    sync_sites = _sync_sites(ctx, smap, gaps, win_s, win_e, steps)
    idle_lines = gaps.lines() if gaps else []
    notes += _run_notes(run_info or {})
    a = Analysis(
        trace=trace,
        steps=steps,
        step_source=source,
        device=device,
        gpu_recorded=gpu_recorded,
        breakdown_ns={k: sum(s.breakdown_ns.get(k, 0) for s in steps) for k in BREAKDOWN},
        idle_ns={k: sum(s.idle_ns.get(k, 0) for s in steps) for k in IDLE_CAUSES},
        sync_sites=sync_sites,
        idle_lines=idle_lines,
        idle_library_lines=gaps.lines(by="library") if gaps else [],
        copies=_copies(ctx, win_s, win_e, notes),
        kernels=_kernels(ctx, win_s, win_e, device, smap, _main_thread(trace.events, ctx), notes),
        memory=_memory(ctx, trace, win_s, win_e, device, smap, steps, notes),
        dataloader=_dataloader(ctx, smap, win_s, win_e),
        gap_count=gaps.count if gaps else 0,
        notes=notes,
        run_info=dict(run_info or {}),
        timeline=_timeline(steps, busy, gaps),
        source_map=smap,
        had_sidecar=sidecar is not None,
        gaps=gaps,
    )
    _finish(a, ctx, busy, win_s, win_e)
    a.notes += extra_notes
    return a


def _chosen_steps(
    trace: Trace, ctx: _Context, step: Optional[int], notes: list[str]
) -> tuple[list[Step], str]:
    """The steps to analyse (all, or the one asked for) and where they came from."""
    steps, source = _steps(trace.events, ctx, notes)
    steps = validate.nonempty(trace, steps, notes)
    if step is not None:
        steps = [s for s in steps if s.number == step]
        if not steps:
            raise TraceError(trace.path, f"no ProfilerStep#{step} in this trace")
    return steps, source


def _device_notes(trace: Trace, device: DeviceInfo, gpu_recorded: bool) -> list[str]:
    """Why device time is not measured, where the trace shows a device but no GPU timeline."""
    if device.unmeasured and not gpu_recorded:
        shown = ", ".join(f"{c}: {n}" for c, n in device.unmeasured.items())
        return [
            f"the trace shows {device.accelerator} device activity ({shown} events); idlehound measures "
            "CUDA and ROCm GPU timelines only, so device busy and idle time are not reported: the host "
            "side is analysed"
        ]
    if trace.cuda_run and not gpu_recorded:
        return [
            "CUDA was in use but the trace holds no GPU events: CUPTI did not record "
            "(profiling permissions?). Only the CPU side is analysed; GPU idle is unknown."
        ]
    return []


def _finish(a: Analysis, ctx: _Context, busy: iv.Set, win_s: np.ndarray, win_e: np.ndarray) -> None:
    """What needs the whole analysis: per-rank figures, one-off slow launches, the replay and its correction."""
    smap, steps = a.source_map, a.steps
    assert smap is not None
    a.ranks = _rank_figures(ctx, smap, steps, a.device.index, busy)
    _slow_launches(ctx, a.kernels, busy, win_s, win_e)
    if a.kernels.slow_launches:
        a.notes.append(
            f"{a.kernels.slow_launches} one-off launch call(s) of up to "
            f"{a.kernels.slow_launch_max_us / 1e3:.2f} ms (first launch, code-object load) in the "
            "profiled steps: start-up cost; profile later steps (schedule wait/warmup) for steady state"
        )
    if a.gpu_recorded and steps:
        a.replay = _replay(ctx, smap, steps, a.device.index, a.gaps)
        a.observer = observer.correct(a.replay, a.run_info)
        a.notes += observer.notes(a.observer)


@dataclass
class IdleGaps:
    """Every GPU idle gap inside the steps (docs/metrics.md, "Idle gaps"), one entry per gap, in time order."""

    start_ns: np.ndarray
    end_ns: np.ndarray
    step: np.ndarray  # index into Analysis.steps
    ns: dict[str, np.ndarray]  # idle cause -> the gap's time charged to it
    cause: list[str]  # the main cause: the one with the most of the gap's time
    location: list[Optional[SourceLoc]]  # the line the main cause's time is charged to
    sync_call: np.ndarray  # the blocking call (event index) the gap's sync time is charged to, or -1


def idle_gaps(a: Analysis) -> Optional[IdleGaps]:
    """The gaps behind the idle figures, each with its main cause and line (None without GPU events)."""
    g = a.gaps
    if g is None:
        return None
    main = g.main_cause()
    return IdleGaps(
        start_ns=g.gs,
        end_ns=g.ge,
        step=g.step,
        ns=dict(g.ns),
        cause=[IDLE_CAUSES[int(k)] for k in main],
        location=g.main_lines(),
        sync_call=g.sync_owner,
    )


def blocking_waits(a: Analysis) -> tuple[np.ndarray, np.ndarray]:
    """(blocking call, GPU op it waited for) as event indices of a.trace.events, from the replay's model."""
    if a.replay is None:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return a.replay.waited_for()


SLOW_LAUNCH_NS = 1_000_000
SLOW_LAUNCH_FACTOR = 20
SLOW_LAUNCH_MAX_SHARE = (
    100  # more than 1 in 100 launches slow (and more than 2) is overhead, not one-off cost
)


def _slow_launches(ctx: _Context, k: KernelStats, busy: iv.Set, s0: np.ndarray, s1: np.ndarray) -> None:
    """A few launch calls of a millisecond or more, 20x the median: one-off costs (first launch, code-object
    load), not the per-launch overhead of many tiny kernels. Many slow launches stay counted as launch time."""
    ev = ctx.ev
    if ctx.launch.size < 2:
        return
    dur = ev.dur[ctx.launch]
    slow = ctx.launch[(dur >= SLOW_LAUNCH_NS) & (dur >= SLOW_LAUNCH_FACTOR * np.median(dur))]
    if slow.size == 0 or slow.size > max(2, ctx.launch.size // SLOW_LAUNCH_MAX_SHARE):
        return
    ops = ctx.op_of_ext(ev.ext[slow])  # the op that made the call: its dispatch is part of the one-off cost
    idle = iv.subtract(iv.intersect(ctx.spans(np.concatenate([slow, ops[ops >= 0]])), iv.union(s0, s1)), busy)
    k.slow_launches = int(slow.size)
    k.slow_launch_max_us = float(ev.dur[slow].max()) / 1e3
    k.slow_launch_idle_ns = int(iv.total(idle))


def _replay(
    ctx: _Context, smap: SourceMap, steps: list[Step], device: Optional[int], gaps: Optional[_Gaps]
) -> Replay:
    ev = ctx.ev
    own = np.array([smap.within(int(ev.tid[j]), int(ev.ts[j]), _OWN_FRAMES) for j in ctx.sync], bool)
    launching = iv.subtract(launching_spans(ctx), ctx.spans(ctx.dataloader))  # a graph does not load the data
    allocator = ctx.spans(ctx.allocator)
    host_only = iv.EMPTY
    if gaps is not None and gaps.count:
        long_host = (gaps.ns["cpu_ops"] + gaps.ns["python"]) > 0
        other = iv.union(
            np.concatenate([launching[0], allocator[0], ev.ts[ctx.sync], ev.ts[ctx.dataloader]]),
            np.concatenate(
                [
                    launching[1],
                    allocator[1],
                    ev.ts[ctx.sync] + ev.dur[ctx.sync],
                    ev.ts[ctx.dataloader] + ev.dur[ctx.dataloader],
                ]
            ),
        )
        host_only = iv.subtract(iv.union(gaps.gs[long_host], gaps.ge[long_host]), other)
    groups = sync_groups(ctx, own, _copy_name_by_ext(ctx))
    spans = {
        "launching": launching,
        "allocator": allocator,
        "host_only": host_only,
        "reads": _read_calls(ctx, smap, groups == "sync"),
    }
    return Replay(ctx, steps, device, groups, spans)


_READ_RE = re.compile(r"print|__repr__|__format__|__str__|_tensor_str|method (item|tolist|cpu|numpy) of")


def _read_calls(ctx: _Context, smap: SourceMap, keep: np.ndarray) -> iv.Set:
    """Host spans of the calls that read a GPU value (print(t), .item(), .cpu()...) around each blocking call:
    moving the read out of the loop removes the whole call, formatting included, not only its wait."""
    sync = ctx.sync[keep]
    if sync.size == 0 or smap.n == 0:
        return iv.EMPTY
    ev = ctx.ev
    k = smap.innermost(ev.tid[sync], ev.ts[sync])
    lo, hi = [], []
    for f in k:
        best = -1
        while f >= 0 and smap.loc[f] is None:  # up to the user's own frame, not beyond
            if _READ_RE.search(smap.name(f)):
                best = f
            f = int(smap.parent[f])
        if best >= 0:
            lo.append(smap.start[best])
            hi.append(smap.end[best])
    return iv.union(np.array(lo, np.int64), np.array(hi, np.int64))


WINDOW_UTIL_GAP_PCT = 20  # the window's mean utilisation this far from the run's: the window is not typical


def _rank_figures(
    ctx: _Context, smap: SourceMap, steps: list[Step], device: Optional[int], busy: iv.Set
) -> dict[str, Any]:
    """What a multi-rank comparison needs from one rank: communication time, how much of it the GPU's compute
    hid, and the time spent in calls made from each user line (per step)."""
    s0 = np.array([s.start_ns for s in steps], np.int64)
    s1 = np.array([s.end_ns for s in steps], np.int64)
    window = iv.union(s0, s1)
    g = ctx.gpu_on(device)
    gsel = np.isin(ctx.gpu, g)
    comm = ctx.spans(np.concatenate([g[ctx.is_comm[gsel]], ctx.comm_ops]))
    comm = iv.intersect(comm, window)
    compute = ctx.spans(g[ctx.is_kernel[gsel] & ~ctx.is_comm[gsel]])
    exposed = iv.subtract(comm, compute) if g.size else comm
    n = max(len(steps), 1)
    return {
        "comm_ms": iv.total(comm) / n / 1e6,
        "exposed_comm_ms": iv.total(exposed) / n / 1e6,
        "lines": smap.time_by_line(s0, s1, n),
    }


def _run_notes(run: dict[str, Any]) -> list[str]:
    """What the whole-run sampler and step timing say about the profiled window."""
    out = []
    s = run.get("sampler") or {}
    if s.get("sawtooth"):
        out.append(
            f"GPU utilisation saw-tooths over the whole run ({100 * s['idle_sample_share']:.0f}% of samples "
            "idle between busy bursts): the GPU works in bursts and waits for input between them"
        )
    if (
        s.get("window_mean_util") is not None
        and s.get("mean_util") is not None
        and abs(s["window_mean_util"] - s["mean_util"]) > WINDOW_UTIL_GAP_PCT
    ):
        what = (
            "GPU utilisation" if s.get("source") == "nvml" else "the process's CPU use"
        )  # no NVML: CPU samples
        out.append(
            f"the profiled window is not typical of the run: {what} {s['window_mean_util']:.0f}% in "
            f"the window vs {s['mean_util']:.0f}% over the run"
        )
    cut = (run.get("window") or {}) if isinstance(run.get("window"), dict) else {}
    if cut.get("cut_by") in ("time budget", "memory budget"):  # the last step in the trace is partial
        out.append(
            f"the window was cut by its {cut['cut_by']} after {cut.get('steps_recorded')} whole step(s) "
            "(--max-window-seconds / --max-window-mb): the last step shown is partial"
        )
    return out


def _timeline(
    steps: list[Step], busy: iv.Set, gaps: Optional[_Gaps], max_steps: int = 3, max_spans: int = 4000
) -> dict[str, Any]:
    """Busy spans and idle gaps (with their main cause) over the first steps, for the HTML strip."""
    if not steps:
        return {}
    lo, hi = steps[0].start_ns, steps[min(max_steps, len(steps)) - 1].end_ns
    bs, be = busy
    keep = (be > lo) & (bs < hi)
    out: dict[str, Any] = {
        "start_ns": lo,
        "end_ns": hi,
        "busy": [[int(a - lo), int(b - lo)] for a, b in zip(bs[keep][:max_spans], be[keep][:max_spans])],
        "gaps": [],
    }
    if gaps is not None and gaps.count:
        sel = np.flatnonzero((gaps.ge > lo) & (gaps.gs < hi))[:max_spans]
        table = np.stack([gaps.ns[c][sel] for c in IDLE_CAUSES]) if sel.size else np.zeros((0, 0))
        for j, col in zip(sel, table.T if sel.size else []):
            out["gaps"].append([int(gaps.gs[j] - lo), int(gaps.ge[j] - lo), IDLE_CAUSES[int(np.argmax(col))]])
    return out


__all__ = ["Analysis", "IdleGaps", "analyze", "blocking_waits", "idle_gaps"]
