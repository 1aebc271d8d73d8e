"""analyze(): steps, busy/idle, breakdown, idle gaps by cause, syncs, copies, kernels, memory."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from ..errors import TraceError
from ..trace import EventTable, Trace
from . import _intervals as iv
from . import _roles as roles
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
from ._source import SourceLoc, SourceMap, is_user_file, parse_frame

# A sync "drains" a gap when it was already waiting as the GPU went idle: it began before the gap (within
# clock jitter) and returned within SYNC_TOLERANCE_NS of the gap opening or inside it.
SYNC_START_JITTER_NS = 2_000
SYNC_TOLERANCE_NS = 20_000
_OWN_FRAMES = ("idlehound/capture/", "torch/profiler/")
SHORT_GAP_NS = 250_000  # shorter idle gaps between kernels are per-op host overhead, not a block of host work


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
    short_gap_ns: int  # idle in gaps shorter than 50 µs between kernels
    notes: list[str] = field(default_factory=list)
    run_info: dict[str, Any] = field(default_factory=dict)
    timeline: dict[str, Any] = field(default_factory=dict)  # busy spans and idle gaps of the first steps
    ranks: dict[str, Any] = field(default_factory=dict)  # communication and per-line time, for multi-rank runs

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


def analyze(trace: Trace, sidecar: Optional[dict] = None, step: Optional[int] = None,
            run_info: Optional[dict] = None) -> Analysis:
    """Measure where every step's time went and why the GPU idled. See docs/metrics.md."""
    ev = trace.events
    ctx = _Context(ev)
    notes: list[str] = list(trace.warnings)
    steps, source = _steps(ev, ctx, notes)
    if step is not None:
        steps = [s for s in steps if s.number == step]
        if not steps:
            raise TraceError(trace.path, f"no ProfilerStep#{step} in this trace")
    device = _device(trace, ctx)
    gpu_recorded = ctx.gpu.size > 0
    if trace.cuda_run and not gpu_recorded:
        notes.append("CUDA was in use but the trace holds no GPU events: CUPTI did not record "
                     "(profiling permissions?). Only the CPU side is analysed; GPU idle is unknown.")
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
        trace=trace, steps=steps, step_source=source, device=device, gpu_recorded=gpu_recorded,
        breakdown_ns={k: sum(s.breakdown_ns.get(k, 0) for s in steps) for k in BREAKDOWN},
        idle_ns={k: sum(s.idle_ns.get(k, 0) for s in steps) for k in IDLE_CAUSES},
        sync_sites=sync_sites, idle_lines=idle_lines,
        copies=_copies(ctx, win_s, win_e), kernels=_kernels(ctx, win_s, win_e, device),
        memory=_memory(ctx, trace, win_s, win_e, device, smap, steps),
        dataloader=_dataloader(ctx, smap, win_s, win_e),
        gap_count=gaps.count if gaps else 0, short_gap_ns=gaps.short_ns if gaps else 0,
        notes=notes, run_info=dict(run_info or {}),
        timeline=_timeline(steps, busy, gaps),
    )
    a.ranks = _rank_figures(ctx, smap, steps, device.index, busy)
    return a


def _rank_figures(ctx: _Context, smap: SourceMap, steps: list[Step], device: Optional[int],
                  busy: iv.Set) -> dict[str, Any]:
    """What a multi-rank comparison needs from one rank: communication time, how much of it the GPU's compute
    hid, and the time spent in calls made from each user line (per step)."""
    ev = ctx.ev
    s0 = np.array([s.start_ns for s in steps], np.int64)
    s1 = np.array([s.end_ns for s in steps], np.int64)
    window = iv.union(s0, s1)
    g = ctx.gpu_on(device)
    gsel = np.isin(ctx.gpu, g)
    comm = iv.union(*_cat_arrays(ev, g[ctx.is_comm[gsel]], ctx.comm_ops))
    comm = iv.intersect(comm, window)
    compute = _set(ev, g[ctx.is_kernel[gsel] & ~ctx.is_comm[gsel]])
    exposed = iv.subtract(comm, compute) if g.size else comm
    n = max(len(steps), 1)
    return {"comm_ms": iv.total(comm) / n / 1e6, "exposed_comm_ms": iv.total(exposed) / n / 1e6,
            "lines": smap.time_by_line(s0, s1, n)}



def _run_notes(run: dict[str, Any]) -> list[str]:
    """What the whole-run sampler and step timing say about the profiled window."""
    out = []
    s = run.get("sampler") or {}
    if s.get("sawtooth"):
        out.append(f"GPU utilisation saw-tooths over the whole run ({100 * s['idle_sample_share']:.0f}% of samples "
                   "idle between busy bursts): the GPU works in bursts and waits for input between them")
    if s.get("window_mean_util") is not None and s.get("mean_util") is not None \
            and abs(s["window_mean_util"] - s["mean_util"]) > 20:
        out.append(f"the profiled window is not typical of the run: GPU utilisation {s['window_mean_util']:.0f}% in "
                   f"the window vs {s['mean_util']:.0f}% over the run")
    ratio = run.get("profiler_overhead")
    if ratio and ratio > 1.25:
        out.append(f"the profiler slowed steps {ratio:.2f}x ({run.get('unprofiled_step_ms')} -> "
                   f"{run.get('profiled_step_ms')} ms): host-side causes are inflated by the observer")
    return out


def _timeline(steps: list[Step], busy: iv.Set, gaps: Optional[_Gaps], max_steps: int = 3,
              max_spans: int = 4000) -> dict[str, Any]:
    """Busy spans and idle gaps (with their main cause) over the first steps, for the HTML strip."""
    if not steps:
        return {}
    lo, hi = steps[0].start_ns, steps[min(max_steps, len(steps)) - 1].end_ns
    bs, be = busy
    keep = (be > lo) & (bs < hi)
    out: dict[str, Any] = {"start_ns": lo, "end_ns": hi,
                           "busy": [[int(a - lo), int(b - lo)] for a, b in zip(bs[keep][:max_spans], be[keep][:max_spans])],
                           "gaps": []}
    if gaps is not None and gaps.count:
        sel = np.flatnonzero((gaps.ge > lo) & (gaps.gs < hi))[:max_spans]
        table = np.stack([gaps.ns[c][sel] for c in IDLE_CAUSES]) if sel.size else np.zeros((0, 0))
        for j, col in zip(sel, table.T if sel.size else []):
            out["gaps"].append([int(gaps.gs[j] - lo), int(gaps.ge[j] - lo), IDLE_CAUSES[int(np.argmax(col))]])
    return out


class _Context:
    """Index arrays of the events each analysis needs, computed once."""

    def __init__(self, ev: EventTable) -> None:
        self.ev = ev
        x = ev.ph == 0
        self.gpu = np.flatnonzero(ev.mask_cat(*roles.GPU_CATS) & (ev.pid >= 0))
        self.gpu = self.gpu[np.argsort(ev.ts[self.gpu], kind="stable")]
        self.runtime = np.flatnonzero(ev.mask_cat(*roles.RUNTIME_CATS))
        self.cpu_ops = np.flatnonzero(ev.mask_cat(*roles.CPU_OP_CATS))
        self.annotations = np.flatnonzero(ev.mask_cat("user_annotation"))
        self.python = np.flatnonzero(ev.mask_cat("python_function"))
        self.x_cpu = np.flatnonzero(x & ~np.isin(np.arange(len(ev)), self.gpu) & (ev.pid >= 0)
                                    & ~ev.mask_cat("gpu_user_annotation", "cuda_sync"))
        rn = ev.name[self.runtime]
        self.launch = self.runtime[np.isin(rn, ev.name_ids(roles.is_launch))]
        self.sync = self.runtime[np.isin(rn, ev.name_ids(roles.is_sync_call))]
        self.sync = self.sync[np.argsort(ev.ts[self.sync], kind="stable")]
        self.allocator = self.runtime[np.isin(rn, ev.name_ids(roles.is_allocator_call))]
        an = ev.name[self.annotations]
        self.dataloader = self.annotations[np.isin(an, ev.name_ids(roles.is_dataloader))]
        gn = ev.name[self.gpu]
        kernel_cat = ev.cat_id("kernel"), ev.cat_id("Kernel")
        self.is_kernel = np.isin(ev.cat[self.gpu], kernel_cat)
        self.is_comm = np.isin(gn, ev.name_ids(roles.is_comm_kernel))
        host_ops = np.concatenate([self.cpu_ops, self.annotations])
        # Collectives: `nccl:all_reduce`/`gloo:all_reduce` annotations (often on a comm thread) and c10d ops.
        self.comm_ops = host_ops[np.isin(ev.name[host_ops], ev.name_ids(roles.is_comm_op))]
        # correlation id -> runtime event, for GPU op -> launch lookups
        rc = ev.corr[self.runtime]
        order = np.argsort(rc, kind="stable")
        self._rt_corr_sorted, self._rt_by_corr = rc[order], self.runtime[order]
        # External id -> cpu_op
        oe = ev.ext[self.cpu_ops]
        order = np.argsort(oe, kind="stable")
        self._op_ext_sorted, self._op_by_ext = oe[order], self.cpu_ops[order]

    def runtime_of(self, gpu_idx: np.ndarray) -> np.ndarray:
        """The runtime call that enqueued each GPU op (by correlation), or -1."""
        return _lookup(self._rt_corr_sorted, self._rt_by_corr, self.ev.corr[gpu_idx])

    def op_of_ext(self, ext: np.ndarray) -> np.ndarray:
        return _lookup(self._op_ext_sorted, self._op_by_ext, ext)

    def gpu_on(self, device: Optional[int]) -> np.ndarray:
        if device is None:
            return self.gpu
        return self.gpu[self.ev.pid[self.gpu] == device]

    def busy_set(self, device: Optional[int]) -> iv.Set:
        g = self.gpu_on(device)
        return iv.union(self.ev.ts[g], self.ev.ts[g] + self.ev.dur[g])

    def host_set(self, idx: np.ndarray, tid: Optional[int] = None) -> iv.Set:
        if tid is not None:
            idx = idx[self.ev.tid[idx] == tid]
        return iv.union(self.ev.ts[idx], self.ev.ts[idx] + self.ev.dur[idx])


def _lookup(keys_sorted: np.ndarray, values: np.ndarray, q: np.ndarray) -> np.ndarray:
    if keys_sorted.size == 0:
        return np.full(q.shape, -1, dtype=np.int64)
    pos = np.clip(np.searchsorted(keys_sorted, q), 0, keys_sorted.size - 1)
    ok = (keys_sorted[pos] == q) & (q != -1)
    return np.where(ok, values[pos], -1)


# ---------------------------------------------------------------- steps

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
    if ctx.gpu.size and len(steps) > 1 and counted[-1] == 0 and counted[:-1].mean() > 0:
        notes.append(f"dropped the last step (#{steps[-1].number}): the profiler stopped before its GPU work")
        steps.pop()


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


# ---------------------------------------------------------------- breakdown

def _breakdown(ctx: _Context, steps: list[Step], device: Optional[int]) -> None:
    """Exposed time per category, claimed in priority order so the parts sum to the step."""
    ev = ctx.ev
    g = ctx.gpu_on(device)
    gsel = np.isin(ctx.gpu, g)
    kcat = ctx.is_kernel[gsel]
    comm = ctx.is_comm[gsel]
    memcpy = np.isin(ev.cat[g], [ev.cat_id("gpu_memcpy"), ev.cat_id("Memcpy")])
    memset = np.isin(ev.cat[g], [ev.cat_id("gpu_memset"), ev.cat_id("Memset")])
    step_like = ev.mask_names(lambda n: roles.step_number(n) is not None)
    host_cpu = ctx.x_cpu[~step_like[ctx.x_cpu] & ~np.isin(ctx.x_cpu, ctx.runtime)
                         & ~np.isin(ctx.x_cpu, ctx.dataloader)]
    sets = {
        "Kernel": _set(ev, g[kcat & ~comm]),
        "Memcpy": _set(ev, g[memcpy]),
        "Memset": _set(ev, g[memset]),
        "Communication": iv.union(*_cat_arrays(ev, g[comm], ctx.comm_ops)),
        "Runtime": _set(ev, ctx.runtime),
        "DataLoader": _set(ev, ctx.dataloader),
        "CPU Exec": _set(ev, host_cpu),
    }
    s0 = np.array([s.start_ns for s in steps], np.int64)
    s1 = np.array([s.end_ns for s in steps], np.int64)
    remaining = iv.union(s0, s1)
    per = {}
    for name in BREAKDOWN[:-1]:
        claimed = iv.intersect(remaining, sets[name])
        per[name] = iv.measure_in(claimed, s0, s1)
        remaining = iv.subtract(remaining, sets[name])
    per["Other"] = iv.measure_in(remaining, s0, s1)
    for i, s in enumerate(steps):
        s.breakdown_ns = {k: int(per[k][i]) for k in BREAKDOWN}


def _set(ev: EventTable, idx: np.ndarray) -> iv.Set:
    return iv.union(ev.ts[idx], ev.ts[idx] + ev.dur[idx])


def _cat_arrays(ev: EventTable, *groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    idx = np.concatenate(groups) if groups else np.zeros(0, np.int64)
    return ev.ts[idx], ev.ts[idx] + ev.dur[idx]


# ---------------------------------------------------------------- idle gaps

class _Gaps:
    """Every GPU idle gap inside the steps, split by what the host was doing meanwhile."""

    def __init__(self, ctx: _Context, steps: list[Step], busy: iv.Set, smap: SourceMap) -> None:
        ev = ctx.ev
        self.ctx, self.smap = ctx, smap
        s0 = np.array([s.start_ns for s in steps], np.int64)
        s1 = np.array([s.end_ns for s in steps], np.int64)
        whole = iv.subtract(iv.union(s0, s1), busy)
        self.gs, self.ge = iv.split_at(whole, s0)  # each gap within one step
        self.count = int(self.gs.size)
        # The whole idle stretch each gap belongs to: drains and lengths are judged on it, not on the pieces.
        self.ws, self.we = whole
        self.whole_of = iv.owner(self.gs, self.ws, self.we)
        self.step = iv.owner(self.gs, s0, s1)
        self.main_tid = _main_thread(ev, ctx)
        self.tid = self._launch_thread()
        self.ns = {c: np.zeros(self.count, np.int64) for c in IDLE_CAUSES}
        self.rep_t = {c: self.gs.copy() for c in IDLE_CAUSES}
        self.drained_by = np.full(self.count, -1, dtype=np.int64)
        self._sync_frames()
        self._attribute()
        self._drain()
        self._short_gaps_are_launches()
        self._sync_owner()
        for c in IDLE_CAUSES:
            per = np.zeros(len(steps), np.int64)
            np.add.at(per, self.step[self.step >= 0], self.ns[c][self.step >= 0])
            for i, s in enumerate(steps):
                s.idle_ns[c] = int(per[i])
        self.short_ns = self._short_gaps(busy)

    def _launch_thread(self) -> np.ndarray:
        """Host thread that enqueued the GPU op ending each gap (main thread if unknown)."""
        ctx, ev = self.ctx, self.ctx.ev
        g = ctx.gpu
        nxt = np.searchsorted(ev.ts[g], self.ge, side="left")
        tid = np.full(self.count, self.main_tid, dtype=np.int64)
        ok = nxt < g.size
        rt = ctx.runtime_of(g[nxt[ok]])
        tid_ok = np.where(rt >= 0, ev.tid[np.clip(rt, 0, None)], self.main_tid)
        tid[ok] = tid_ok
        return tid

    def _sync_frames(self) -> None:
        """The user-called frames (print, .item(), .cpu()...) that contain a blocking call."""
        ev, sync = self.ctx.ev, self.ctx.sync
        f = self.smap.call_frame(ev.tid[sync], ev.ts[sync]) if sync.size else np.zeros(0, np.int64)
        keep = f >= 0
        frames, first = np.unique(f[keep], return_index=True)
        order = np.argsort(self.smap.start[frames], kind="stable")
        self.sf_idx = frames[order]
        self.sf_sync = sync[keep][first][order]
        self.sf_set = iv.union(self.smap.start[self.sf_idx], self.smap.end[self.sf_idx])

    def _attribute(self) -> None:
        ctx, ev = self.ctx, self.ctx.ev
        launching_ops = ctx.op_of_ext(ev.ext[ctx.launch])
        launching_ops = np.unique(launching_ops[launching_ops >= 0])
        dl = _set(ev, ctx.dataloader)
        for tid in np.unique(self.tid):
            sel = np.flatnonzero(self.tid == tid)
            remaining = (self.gs[sel], self.ge[sel])
            classes = [
                ("data_loading", dl),
                ("allocator", ctx.host_set(ctx.allocator, tid)),
                ("sync", _merge(ctx.host_set(ctx.sync, tid), self.sf_set)),
                ("launch", iv.union(*_cat_arrays(ev, ctx.launch[ev.tid[ctx.launch] == tid],
                                                 launching_ops[ev.tid[launching_ops] == tid]))),
                ("cpu_ops", ctx.host_set(ctx.cpu_ops, tid)),
            ]
            for cause, cset in classes:
                claimed = iv.intersect(remaining, cset)
                self.ns[cause][sel] = iv.measure_in(claimed, self.gs[sel], self.ge[sel])
                self.rep_t[cause][sel] = _first_inside(claimed, self.gs[sel], self.ge[sel])
                remaining = iv.subtract(remaining, cset)
            self.ns["python"][sel] = iv.measure_in(remaining, self.gs[sel], self.ge[sel])

    def _drain(self) -> None:
        """A gap that opens while a blocking call waits is the sync's doing (except data loading)."""
        ev, sync = self.ctx.ev, self.ctx.sync
        if sync.size == 0 or self.count == 0:
            return
        s_start, s_end = ev.ts[sync], ev.ts[sync] + ev.dur[sync]
        ws, we = self.ws, self.we
        j = np.searchsorted(ws, s_end + SYNC_TOLERANCE_NS, side="right") - 1
        jj = np.clip(j, 0, None)
        hit = ((j >= 0) & (s_start <= ws[jj] + SYNC_START_JITTER_NS)
               & (s_end >= ws[jj] - SYNC_TOLERANCE_NS) & (s_end <= we[jj] + SYNC_TOLERANCE_NS))
        whole_drained = np.full(ws.size, -1, dtype=np.int64)
        for k in np.flatnonzero(hit)[::-1]:  # earliest sync wins
            whole_drained[jj[k]] = sync[k]
        self.drained_by = np.where(self.whole_of >= 0, whole_drained[np.clip(self.whole_of, 0, None)], -1)
        d = self.drained_by >= 0
        gap_len = self.ge - self.gs
        for c in ("allocator", "launch", "cpu_ops", "python"):
            self.ns[c][d] = 0
        self.ns["sync"][d] = gap_len[d] - self.ns["data_loading"][d]

    def _short_gaps_are_launches(self) -> None:
        """Short gaps between kernels are per-op host overhead (dispatch, launch, the Python between ops)."""
        whole_len = (self.we - self.ws)[np.clip(self.whole_of, 0, None)]
        short = (self.drained_by < 0) & (whole_len < SHORT_GAP_NS)
        for c in ("cpu_ops", "python"):
            self.ns["launch"][short] += self.ns[c][short]
            self.ns[c][short] = 0

    def _short_gaps(self, busy: iv.Set) -> int:
        """Idle in gaps under 50 µs between two GPU ops: launch overhead between back-to-back kernels."""
        inner = (self.gs > busy[0].min()) if busy[0].size else np.zeros(self.count, bool)
        return int(((self.ge - self.gs)[(self.ge - self.gs < 50_000) & inner]).sum())

    def _sync_owner(self) -> None:
        """The sync call each gap's sync time is charged to: the one that drained it, else the one
        inside the user call (print, .item()...) the host was running during the gap."""
        self.sync_owner = self.drained_by.copy()
        rest = np.flatnonzero((self.sync_owner < 0) & (self.ns["sync"] > 0))
        if rest.size and self.sf_idx.size:
            st, en = self.smap.start[self.sf_idx], self.smap.end[self.sf_idx]
            k = np.searchsorted(st, self.rep_t["sync"][rest], side="right") - 1
            ok = (k >= 0) & (self.rep_t["sync"][rest] < en[np.clip(k, 0, None)])
            self.sync_owner[rest[ok]] = self.sf_sync[k[ok]]

    def idle_after(self, sync_idx: np.ndarray) -> np.ndarray:
        """GPU idle (ns) charged to each sync call (see _sync_owner)."""
        total: dict[int, int] = {}
        for j in np.flatnonzero(self.sync_owner >= 0):
            total[int(self.sync_owner[j])] = total.get(int(self.sync_owner[j]), 0) + int(self.ns["sync"][j])
        return np.array([total.get(int(s), 0) for s in sync_idx], dtype=np.int64)

    def lines(self, top: int = 10) -> list[IdleLine]:
        """GPU idle by source line and cause, largest first."""
        agg: dict[tuple, list[int]] = {}
        ev = self.ctx.ev
        for cause in IDLE_CAUSES:
            sel = np.flatnonzero(self.ns[cause] > 0)
            if sel.size == 0:
                continue
            tids, times = self.tid[sel].copy(), self.rep_t[cause][sel].copy()
            if cause == "sync":
                d = self.sync_owner[sel]
                has = d >= 0
                tids[has], times[has] = ev.tid[d[has]], ev.ts[d[has]]
            if cause == "data_loading":
                tids[:] = self.main_tid
            locs = self.smap.locate(tids, times)
            missing = [i for i, loc in enumerate(locs) if loc is None]
            if missing:  # e.g. the autograd thread: the user line is the one that called backward()
                again = self.smap.locate(np.full(len(missing), self.main_tid), times[missing])
                for i, loc in zip(missing, again):
                    locs[i] = loc
            for j, loc in zip(sel, locs):
                acc = agg.setdefault((cause, loc), [0, 0])
                acc[0] += int(self.ns[cause][j])
                acc[1] += 1
        rows = [IdleLine(c, loc, v[0], v[1]) for (c, loc), v in agg.items()]
        rows.sort(key=lambda r: -r.idle_ns)
        return rows[:top]


def _merge(a: iv.Set, b: iv.Set) -> iv.Set:
    return iv.union(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))


def _first_inside(a: iv.Set, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """First time within each window covered by a (or the window start)."""
    s, e = a
    if s.size == 0:
        return lo.copy()
    k = np.clip(np.searchsorted(e, lo, side="right"), 0, s.size - 1)
    t = np.maximum(lo, s[k])
    return np.where((e[k] > lo) & (t < hi), t, lo)


def _main_thread(ev: EventTable, ctx: _Context) -> int:
    marks = ctx.annotations[ev.mask_names(lambda n: roles.step_number(n) is not None)[ctx.annotations]]
    pool = marks if marks.size else ctx.cpu_ops
    if pool.size == 0:
        return -1
    tids, counts = np.unique(ev.tid[pool], return_counts=True)
    return int(tids[np.argmax(counts)])


# ---------------------------------------------------------------- syncs

def _sync_sites(ctx: _Context, smap: SourceMap, gaps: Optional[_Gaps], s0: np.ndarray, s1: np.ndarray,
                steps: list[Step]) -> list[SyncSite]:
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
    sites: dict[tuple, SyncSite] = {}
    for k, j in enumerate(sync):
        call = ev.names[ev.name[j]]
        op = ev.names[ev.name[ops[k]]] if ops[k] >= 0 else ""
        kind = roles.sync_kind(call, op, copies.get(int(ev.ext[j]), ""))
        # Group by the call the user wrote (print, .item(), .cpu()), not by the ops inside it.
        py = _clean_py(smap.name(frames[k]) if frames[k] >= 0 else smap.innermost_name(int(ev.tid[j]), int(ev.ts[j])) or "")
        if smap.within(int(ev.tid[j]), int(ev.ts[j]), _OWN_FRAMES):
            continue  # the profiler's own syncs (window start/stop), not the user's
        steps[step_of[k]].sync_calls += 1
        parsed = parse_frame(py)
        if parsed and is_user_file(parsed[0]):
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
    out = {}
    for g, r in zip(mc, rt):
        ext = int(ev.ext[r]) if r >= 0 else int(ev.ext[g])
        if ext != -1:
            out.setdefault(ext, ev.names[ev.name[g]])
    return out


# ---------------------------------------------------------------- copies, kernels, memory, loader

def _in_steps(ev: EventTable, idx: np.ndarray, s0: np.ndarray, s1: np.ndarray) -> np.ndarray:
    return idx[iv.owner(ev.ts[idx], s0, s1) >= 0]


def _copies(ctx: _Context, s0: np.ndarray, s1: np.ndarray) -> dict[str, CopyStats]:
    ev = ctx.ev
    mc = ctx.gpu[np.isin(ev.cat[ctx.gpu], [ev.cat_id("gpu_memcpy"), ev.cat_id("Memcpy")])]
    mc = _in_steps(ev, mc, s0, s1)
    out: dict[str, CopyStats] = {}
    for j in mc:
        name = ev.names[ev.name[j]]
        direction = next((d for d in ("HtoD", "DtoH", "DtoD", "PtoP", "HtoH") if d in name), "other")
        c = out.setdefault(direction, CopyStats(direction))
        nbytes = float(ev.nbytes[j]) if ev.nbytes[j] == ev.nbytes[j] else 0.0
        c.count += 1
        c.bytes += nbytes
        c.time_ns += int(ev.dur[j])
        if "Pageable" in name:
            c.pageable_bytes += nbytes
            c.pageable_count += 1
    return out


def _kernels(ctx: _Context, s0: np.ndarray, s1: np.ndarray, device: DeviceInfo) -> KernelStats:
    ev = ctx.ev
    k = ctx.gpu[ctx.is_kernel]
    if device.index is not None:
        k = k[ev.pid[k] == device.index]
    k = _in_steps(ev, k, s0, s1)
    st = KernelStats(count=int(k.size), time_ns=int(ev.dur[k].sum()))
    if k.size == 0:
        return st
    d_us = ev.dur[k] / 1e3
    st.p50_us, st.p90_us, st.max_us = (float(np.percentile(d_us, q)) for q in (50, 90, 100))
    rt = ctx.runtime_of(k)
    direct = (rt >= 0) & np.isin(rt, ctx.launch) & ~np.isin(ev.name[np.clip(rt, 0, None)],
                                                            ev.name_ids(lambda n: "Graph" in n))
    if direct.any():
        st.launches_with_duration = int(direct.sum())
        st.shorter_than_launch = float((ev.dur[k][direct] < ev.dur[rt[direct]]).mean())
    _kernel_groups(ctx, k, st)
    _sm_metrics(ev, k, s0, s1, st)
    return st


def _kernel_groups(ctx: _Context, k: np.ndarray, st: KernelStats) -> None:
    ev = ctx.ev
    names, inv = np.unique(ev.name[k], return_inverse=True)
    time = np.bincount(inv, weights=ev.dur[k]).astype(np.int64)
    count = np.bincount(inv)
    fam: dict[str, list] = {}
    for nid, t, c in zip(names, time, count):
        raw = ev.names[nid]
        prec = roles.matmul_precision(raw)
        g = fam.setdefault(roles.kernel_family(raw), [0, 0, prec])
        g[0] += int(t)
        g[1] += int(c)
        if prec == "fp32":
            st.fp32_matmul_ns += int(t)
        elif prec == "tensor_core":
            st.tensor_core_ns += int(t)
    st.top = sorted((_group(n, v) for n, v in fam.items()), key=lambda g: -g.time_ns)[:10]
    st.fp32_matmul_ops = _fp32_ops(ctx, k)
    ops = ctx.op_of_ext(ev.ext[k])
    conv_ids = ev.name_ids(lambda n: bool(roles.CONV_OP_RE.match(n)))
    is_conv = (ops >= 0) & np.isin(ev.name[np.clip(ops, 0, None)], conv_ids)
    st.conv_ns = int(ev.dur[k][is_conv].sum())


def _group(name: str, v: list):
    from ._model import KernelGroup

    return KernelGroup(name=name, time_ns=v[0], count=v[1], precision=v[2])


def _fp32_ops(ctx: _Context, k: np.ndarray) -> list[str]:
    """Ops (by name) whose fp32 inputs ran on CUDA-core GEMM/conv kernels."""
    ev = ctx.ev
    prec = {nid: roles.matmul_precision(ev.names[nid]) for nid in np.unique(ev.name[k])}
    fk = k[np.array([prec[n] == "fp32" for n in ev.name[k]], dtype=bool)]
    ops = ctx.op_of_ext(ev.ext[fk])
    out = set()
    for o in ops[ops >= 0]:
        types = ev.extra["input_type"].get(int(o), ())
        if not types or "float" in types:
            out.add(ev.names[ev.name[o]])
    return sorted(out)


def _sm_metrics(ev: EventTable, k: np.ndarray, s0: np.ndarray, s1: np.ndarray, st: KernelStats) -> None:
    bps = np.array([ev.extra["blocks_per_sm"].get(int(j), np.nan) for j in k], dtype=np.float64)
    occ = np.array([ev.extra["occupancy"].get(int(j), np.nan) for j in k], dtype=np.float64)
    dur = ev.dur[k].astype(np.float64)
    window = float((s1 - s0).sum())
    ok = np.isfinite(bps) & (bps > 0) | np.isinf(bps)
    if ok.any() and window > 0:
        pos = np.concatenate([ev.ts[k][ok], (ev.ts[k] + ev.dur[k])[ok]])
        val = np.minimum(np.where(np.isinf(bps[ok]), 1.0, bps[ok]), 1e9)
        delta = np.concatenate([val, -val])
        order = np.argsort(pos, kind="stable")
        level = np.cumsum(delta[order])
        seg = np.diff(pos[order]).astype(np.float64)
        st.sm_efficiency = float((np.minimum(level[:-1], 1.0) * seg).sum() / window)
    ok = np.isfinite(occ) & (occ >= 0)
    if ok.any() and dur[ok].sum() > 0:
        st.occupancy = float((occ[ok] * dur[ok]).sum() / dur[ok].sum())


def _memory(ctx: _Context, trace: Trace, s0: np.ndarray, s1: np.ndarray, device: DeviceInfo,
            smap: SourceMap, steps: list[Step]) -> MemoryStats:
    ev = ctx.ev
    m = MemoryStats(capacity=device.memory_bytes)
    mem = np.flatnonzero((ev.ph == 1) & (ev.name == (ev.names.index("[memory]") if "[memory]" in ev.names else -9)))
    dt = ev.extra["device_type"]
    cuda = np.array([j for j in mem if dt.get(int(j)) == 1], dtype=np.int64)
    if cuda.size:
        m.recorded = True
        m.peak_allocated = float(max(ev.extra["total_allocated"][int(j)] or 0 for j in cuda))
        m.peak_reserved = float(max(ev.extra["total_reserved"][int(j)] or 0 for j in cuda))
        inside = _in_steps(ev, cuda, s0, s1)
        m.allocs_per_step = float((ev.nbytes[inside] > 0).sum()) / max(s0.size, 1)
        pts = inside[np.argsort(ev.ts[inside], kind="stable")]
        pts = pts[:: max(1, pts.size // 2000)]  # enough points to draw; bounded for huge traces
        t0 = steps[0].start_ns if steps else 0
        m.curve = [[int(ev.ts[j] - t0), float(ev.extra["total_allocated"].get(int(j)) or 0)] for j in pts]
    rn = ev.names
    m.empty_cache_calls = int(sum(1 for j in ctx.python if "empty_cache" in rn[ev.name[j]]))
    m.allocator_calls = int(_in_steps(ev, ctx.allocator, s0, s1).size)
    return m


def _dataloader(ctx: _Context, smap: SourceMap, s0: np.ndarray, s1: np.ndarray) -> DataLoaderStats:
    ev = ctx.ev
    dl = _in_steps(ev, ctx.dataloader, s0, s1)
    st = DataLoaderStats(host_ns=int(ev.dur[dl].sum()), calls=int(dl.size))
    if dl.size:
        name = ev.names[ev.name[dl[0]]]
        st.iterator = name.split("#", 1)[1].split(".", 1)[0] if "#" in name else ""
        st.location = smap.locate(ev.tid[dl[:1]], ev.ts[dl[:1]] + 1)[0]
    return st


__all__ = ["Analysis", "analyze", "SourceLoc"]
