"""Counterfactual replay: re-run the profiled steps from their dependency model with one cause removed.

The model (docs/metrics.md, "Replay"): one host timeline (all host threads merged in time order; the main
thread waits while the autograd thread works, so they run one after the other), GPU ops queued FIFO per stream,
each no earlier than its launch, and blocking calls that hold the host until the GPU work they waited for is done.
Host time between blocking calls is replayed at a rate (1 = as recorded); a cause is removed by changing the rate
of its host spans, the duration of its GPU ops, or the blocking calls it makes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from . import _intervals as iv
from ._context import _Context
from ._fixes import Fix
from ._gaps import SYNC_TOLERANCE_NS
from ._model import Step
from ._replay_events import (
    EVENT_KINDS,
    _clip,
    _kind_histogram,
    _last_done,
    _op_kinds,
    kind_codes,
)

SYNC_END_TOLERANCE_NS = SYNC_TOLERANCE_NS  # GPU work that ended this soon after a blocking call returned was
# waited for: the gap classifier's drain tolerance (docs/metrics.md, "A drain")
LOADER_READY_NS = 50_000  # host cost of taking a batch that workers already prepared
ASYNC_COPY_NS = 10_000  # host cost of an asynchronous copy from pinned memory
DENSITY_BIN_NS = 50_000  # host events are counted per bin of this width for the profiler's cost
DENSITY_BINS_MAX = 20_000  # a longer window gets wider bins: every replay walks them
LOADER_WAITED_NS = 1_000_000  # a worker-loader call this much longer than taking a ready batch waited for one


# A replay's host segments: (per segment its spans, their kinds, their GPU op indices, ...); see _segments()
Segments = tuple[list[list[tuple[Any, ...]]], list[str], np.ndarray, list[list[int]]]


@dataclass
class _Geometry:
    """What a replay's host clock keeps across host rates and profiler costs (Replay._geometry)."""

    bp: np.ndarray  # breakpoints of the fix's host spans
    # per span (blocking calls, loader, each host kind): which of bp's segments lie inside it
    inside: list[Optional[np.ndarray]]
    kinds: tuple[str, ...]  # the fix's host span kinds, in the order of `inside` after the first one or two
    pts: np.ndarray  # the clock's breakpoints (bp, with the event-density bins where a cost is taken out)
    slope_at: Optional[np.ndarray] = None  # per point: its segment of bp...
    bin_at: Optional[np.ndarray] = None  # ...and its density bin (None: no cost taken out)
    step: np.ndarray = field(default_factory=lambda: np.zeros(0))
    lumps_t: np.ndarray = field(default_factory=lambda: np.zeros(0))  # taking a ready batch: when, and
    lumps_c: np.ndarray = field(default_factory=lambda: np.zeros(1))  # the cost by then
    at: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)  # a named time's
    # segment, its offset into it, and the lumps by then


@dataclass
class Outcome:
    step_ns: float  # mean replayed step
    steps_ns: list[float]
    call_end: Optional[np.ndarray] = None  # replayed end of each blocking call (loader waits included)


class Replay:
    """The dependency model of the profiled steps; play() replays it under a Fix and a host rate."""

    def __init__(
        self,
        ctx: _Context,
        steps: list[Step],
        device: Optional[int],
        sync_group: np.ndarray,
        host_spans: dict[str, iv.Set],
    ) -> None:
        self.steps = steps
        self.w0 = steps[0].host_start_ns if steps else 0
        self.w1 = max((s.end_ns for s in steps), default=0)
        self._ops(ctx, device)
        self.loader = _clip(ctx.spans(ctx.dataloader), self.w0, self.w1)
        self._syncs(ctx, sync_group)
        self._loader_waits(ctx)
        host_spans = {**host_spans, "pageable": self.pageable_calls}
        self.host_spans = {k: _clip(v, self.w0, self.w1) for k, v in host_spans.items()}
        self.marks = np.array([[s.host_start_ns, s.host_end_ns] for s in steps], np.int64).reshape(-1, 2)
        self.recorded_ns = sum(s.duration_ns for s in steps) / max(len(steps), 1)
        self._cache: dict[tuple[Any, ...], Outcome] = {}
        # What every replay shares (filled on first use): the clock per set of host spans, the ops between
        # blocking calls, each op's step, the GPU op kinds' masks.
        self._geometries: dict[tuple[Any, ...], _Geometry] = {}
        self._segs: Optional[Segments] = None
        self._owner: Optional[tuple[np.ndarray, np.ndarray, np.ndarray]] = None
        self._masks: dict[str, np.ndarray] = {}
        self._costs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._event_density(ctx)
        self.overhead_ns = 0.0  # the profiler's cost per host event, taken out of host time (fit_overhead)
        self.event_weights: dict[
            str, float
        ] = {}  # relative cost of an event by kind (EVENT_KINDS; 1 if absent)

    def _event_density(self, ctx: _Context) -> None:
        """Host events per ns, per bin, on the threads that launch GPU work (the main and autograd threads): the
        profiler's cost is per event it records, so dense Python (a model's forward) is inflated more than a
        loader's C work (the Lightning loop: its loader 1.03x, its forward and backward 2.3x)."""
        ev = ctx.ev
        x = ctx.x_cpu[np.isin(ev.tid[ctx.x_cpu], np.unique(ev.tid[ctx.launch]))]
        x = x[(ev.ts[x] >= self.w0) & (ev.ts[x] < self.w1)]
        width = max(DENSITY_BIN_NS, -(-(self.w1 - self.w0) // DENSITY_BINS_MAX))
        self.bins = np.arange(self.w0, self.w1 + width, width, dtype=np.float64)
        kind = kind_codes(ctx)[x]
        counts = _kind_histogram(ev.ts[x], kind, self.bins)
        self.kind_density = {k: counts[i] / float(width) for i, k in enumerate(EVENT_KINDS)}
        self.kind_events = {k: int(counts[i].sum()) for i, k in enumerate(EVENT_KINDS)}  # in the window
        self.density = sum(self.kind_density.values(), np.zeros(self.bins.size - 1))
        self._weighted: dict[str, np.ndarray] = {}  # _weighted_density by the weights' repr

    def _weighted_density(self) -> np.ndarray:
        """Events per ns, each kind counted at its relative cost (the prior's kind weights; all 1 when fitted)."""
        if not self.event_weights or all(w == 1.0 for w in self.event_weights.values()):
            return self.density
        key = repr(sorted(self.event_weights.items()))
        if key not in self._weighted:  # every replay at these weights walks the same bins
            self._weighted[key] = sum(
                (d * self.event_weights.get(k, 1.0) for k, d in self.kind_density.items()),
                np.zeros(self.density.size),
            )
        return self._weighted[key]

    # ---- the model
    def _ops(self, ctx: _Context, device: Optional[int]) -> None:
        ev = ctx.ev
        g = ctx.gpu_on(device)
        rt = ctx.runtime_of(g)
        launch = np.where(rt >= 0, ev.ts[np.clip(rt, 0, None)], -1).astype(np.int64)
        host_end = max((s.host_end_ns for s in self.steps), default=0)
        # Work launched after the last step is no part of the window; work queued before it runs as recorded.
        late = np.where(rt >= 0, launch >= host_end, ev.ts[g] >= self.w1)
        g, rt, launch = g[~late], rt[~late], launch[~late]
        self.op_event = g  # the trace event of each op (for waited_for)
        self.fixed = (rt < 0) | (launch < self.w0)
        self.rec_s = ev.ts[g].astype(np.float64)
        self.dur = ev.dur[g].astype(np.float64)
        self.rec_e = self.rec_s + self.dur
        self.launch = np.where(self.fixed, -1, launch).astype(np.float64)
        streams, self.stream = np.unique(ev.tid[g], return_inverse=True)
        self.n_streams = int(streams.size)
        self.kind = _op_kinds(ctx, g)
        # A pageable copy call stages the data through a driver buffer on the host: pinned, it only enqueues.
        pc = rt[(self.kind == "pageable") & (rt >= 0)]
        self.pageable_calls = iv.union(ev.ts[pc], ev.ts[pc] + ev.dur[pc])
        live = np.flatnonzero(~self.fixed)
        self._by_launch = live[np.argsort(self.launch[live], kind="stable")]
        self._by_launch_t = self.launch[self._by_launch]
        self.lat = self._latency()
        self.gap = self._gaps()

    def _latency(self) -> float:
        """Launch-to-start delay of ops that found their stream idle: the launch path's latency."""
        prev = self._prev_end(self.rec_e)
        idle = ~self.fixed & (prev < self.launch)
        d = (self.rec_s - self.launch)[idle]
        return float(np.clip(np.median(d), 0, 50_000)) if d.size else 5_000.0

    def _prev_end(self, end: np.ndarray) -> np.ndarray:
        """End of the previous op on the same stream (-inf for the first)."""
        prev = np.full(end.shape, -np.inf)
        for s in range(self.n_streams):
            idx = np.flatnonzero(self.stream == s)
            prev[idx[1:]] = np.maximum.accumulate(end[idx])[:-1]
        return prev

    def _gaps(self) -> np.ndarray:
        """Delay each op had beyond its launch and its stream (cross-stream waits, GPU-side gaps): kept as is."""
        prev = self._prev_end(self.rec_e)
        ready = np.where(self.fixed, self.rec_s, np.maximum(self.launch + self.lat, prev))
        out: np.ndarray = np.clip(self.rec_s - ready, 0, None)
        return out

    def _syncs(self, ctx: _Context, group: np.ndarray) -> None:
        ev = ctx.ev
        s = ctx.sync
        # Only the threads that launch GPU work hold up the step (a pin-memory thread's waits do not).
        keep = (ev.ts[s] >= self.w0) & (ev.ts[s] < self.w1) & np.isin(ev.tid[s], ev.tid[ctx.launch])
        s, group = s[keep], group[keep]
        ts, te = ev.ts[s].astype(np.float64), (ev.ts[s] + ev.dur[s]).astype(np.float64)
        ok = np.ones(s.size, bool)  # a call that starts inside the previous one is part of it
        if s.size:
            ok[1:] = ts[1:] >= np.maximum.accumulate(te)[:-1]
        self.s_ts, self.s_te, self.s_group = ts[ok], te[ok], group[ok]
        self.s_event = s[ok].astype(np.int64)  # the trace event of each call (-1: a loader wait, below)
        # The last op of each stream the call waited for: launched before it, done by the time it returned.
        n = self.s_ts.size
        self.s_wait = np.full((n, self.n_streams), -1, dtype=np.int64)
        for st in range(self.n_streams):
            idx = np.flatnonzero(self.stream == st)
            self.s_wait[:, st] = _last_done(
                idx,
                np.where(self.fixed[idx], -np.inf, self.launch[idx]),
                self.rec_e[idx],
                self.s_ts,
                self.s_te + SYNC_END_TOLERANCE_NS,
            )
        waited = self.s_wait >= 0
        e_rec = np.where(waited, self.rec_e[np.where(waited, self.s_wait, 0)], -np.inf).max(
            axis=1, initial=-np.inf
        )
        self._waits = [row[row >= 0] for row in self.s_wait]
        # Host time of the call after the awaited work was done (all of it when it did not wait).
        self.s_tail = self.s_te - np.clip(e_rec, self.s_ts, self.s_te)

    def _loader_waits(self, ctx: _Context) -> None:
        """Calls that waited for a batch from loader workers join the blocking calls: the workers run on their own
        clock, so a faster host waits longer for that batch instead of taking it sooner (the burst-stall case)."""
        ev = ctx.ev
        mp = ctx.dataloader[np.isin(ev.name[ctx.dataloader], ev.name_ids(lambda n: "MultiProcessing" in n))]
        mp = mp[(ev.ts[mp] >= self.w0) & (ev.ts[mp] < self.w1)]
        if mp.size < 2:
            return
        take = float(np.median(ev.dur[mp]))  # taking a batch the workers already prepared
        mp = mp[ev.dur[mp] >= take + LOADER_WAITED_NS]
        ts, te = ev.ts[mp].astype(np.float64), (ev.ts[mp] + ev.dur[mp]).astype(np.float64)
        busy = self.sync_set()
        free = iv.owner(ts.astype(np.int64), busy[0], busy[1]) < 0
        ts, te = ts[free], te[free]
        if ts.size == 0:
            return
        order = np.argsort(np.concatenate([self.s_ts, ts]), kind="stable")
        self.s_ts = np.concatenate([self.s_ts, ts])[order]
        self.s_te = np.concatenate([self.s_te, te])[order]
        self.s_group = np.concatenate([self.s_group, np.full(ts.size, "loader", dtype=object)])[order]
        self.s_tail = np.concatenate([self.s_tail, te - ts])[order]
        self.s_event = np.concatenate([self.s_event, np.full(ts.size, -1, np.int64)])[order]
        self.s_wait = np.concatenate([self.s_wait, np.full((ts.size, self.n_streams), -1, np.int64)])[order]
        self._waits = [row[row >= 0] for row in self.s_wait]

    def waited_for(self) -> tuple[np.ndarray, np.ndarray]:
        """(blocking call, GPU op) event pairs: for each blocking call that waited, the op it waited for that
        finished last (of those launched before the call and done by the time it returned, the model's wait),
        where that op was still running when the call began."""
        if self.n_streams == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        has = (self.s_event >= 0) & (self.s_wait >= 0).any(axis=1)
        if not has.any():
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        ends = np.where(self.s_wait >= 0, self.rec_e[np.clip(self.s_wait, 0, None)], -np.inf)
        last = self.s_wait[np.arange(self.s_wait.shape[0]), np.argmax(ends, axis=1)]
        has &= ends.max(axis=1) > self.s_ts
        return self.s_event[has], self.op_event[last[has]].astype(np.int64)

    @property
    def loader_waited(self) -> int:
        """How many calls waited for a batch from loader workers (they joined the blocking calls)."""
        return int((self.s_group == "loader").sum())

    # ---- playing it
    def play(self, fix: Optional[Fix] = None, rate: float = 1.0) -> Outcome:
        fix = fix or Fix()
        key = (
            repr(sorted(fix.host_rate.items())),
            repr(sorted(fix.gpu_speedup.items())),
            tuple(sorted(fix.drop_syncs)),
            fix.loader_ready,
            round(rate, 6),
            self.overhead_ns,
            repr(sorted(self.event_weights.items())),
        )
        if key not in self._cache:
            self._cache[key] = self._play(fix, rate)
        return self._cache[key]

    def _play(self, fix: Fix, rate: float) -> Outcome:
        if not self.steps:
            return Outcome(0.0, [])
        g = self._geometry(fix)
        clock = self._clock(g, fix, rate)
        # When a batch the workers made came ready, as the unchanged loop at this host rate saw it.
        producer = None
        if self.loader_waited and not fix.loader_ready and fix != Fix():
            producer = self.play(rate=rate).call_end
        call_end = np.full(self.s_ts.size, np.nan)
        c_seq, c_before = self._queued(fix)
        stream_end = np.full(self.n_streams, -np.inf)
        # The clock is a function of recorded time alone: every time the loop needs is mapped once, up front.
        c_launch = clock("launch")
        c_ts, c_te = clock("s_ts").tolist(), clock("s_te").tolist()
        base_rec, base_rep = float(clock("w0")[0]), float(self.w0)  # base_rec: its clock
        segments, groups, order, waits = self._segments()
        c_launch = c_launch[order]  # every op in the order the loop queues them: each stretch is a slice
        end = np.zeros(order.size)  # in that order too
        ats = []
        for k, seg in enumerate(segments):
            at = base_rep - base_rec
            ats.append(at)
            for st, a, b, fixed, rec_s in seg:
                rel = c_launch[a:b] + at + self.lat
                if fixed is not None:
                    rel = np.where(fixed, rec_s, rel)
                # FIFO per stream: end_i = max(release_i, end_{i-1}) + cost_i, by a running max that starts
                # from where the stream's queue stood
                x = np.subtract(rel, c_before[a:b], out=rel)
                x[0] = max(x[0], stream_end[st])
                np.add(c_seq[a:b], np.maximum.accumulate(x, out=x), out=end[a:b])
                stream_end[st] = end[b - 1]
            if k == len(segments) - 1:
                break
            start = c_ts[k] + at
            if groups[k] == "loader":
                took = LOADER_READY_NS if fix.loader_ready else self.s_tail[k] * rate
                out = max(start + took, producer[k]) if producer is not None else start + took
            elif groups[k] in fix.drop_syncs:
                out = start + (ASYNC_COPY_NS if groups[k] == "pageable" else 0.0)
            else:
                ready = max([end[p] for p in waits[k]], default=-np.inf)
                out = max(start, ready) + self.s_tail[k]
            base_rec, base_rep = c_te[k], out
            call_end[k] = out
        # Each step mark moves with the blocking call before it (the interval of recorded time it lies in).
        mark_rep = clock("marks") + np.array(ats)[self._mark_segment()]
        by_op = np.empty(order.size)
        by_op[order] = end
        res = self._steps_of(mark_rep, by_op)
        res.call_end = call_end
        if producer is not None:
            res.step_ns = max(res.step_ns, self._producer_pace(producer))
        return res

    def _producer_pace(self, producer: np.ndarray) -> float:
        """The workers' delivery pace up to their last visible stall: past it the window shows no stall, but the
        workers would keep their pace, so a faster host gains no more than that pace allows."""
        k = np.flatnonzero(self.s_group == "loader")[-1]
        j = int(np.searchsorted(self.marks[:, 0], self.s_ts[k], side="right"))  # steps that asked by then
        return (float(producer[k]) - float(self.w0)) / max(j, 1)

    def _segments(self) -> Segments:
        """The ops each stretch between blocking calls launches, per stream in recorded order (the same for every
        replay): per stretch, (stream, its slice [a, b) of `order`, which of them run as recorded (None: none),
        their recorded start); each call's group; every op in that order; where the ops each call waits for lie
        in it."""
        if self._segs is None:
            # launches up to each call's start
            cut = np.searchsorted(self._by_launch_t, self.s_ts, side="right")
            cut = np.concatenate([[0], cut, [self._by_launch.size]]).tolist()
            segs, parts, n = [], [], 0
            for k in range(len(cut) - 1):
                sel = self._by_launch[cut[k] : cut[k + 1]]
                if k == 0:
                    sel = np.concatenate([np.flatnonzero(self.fixed), sel])
                seg = []
                st = self.stream[sel]
                for s in np.unique(st) if self.n_streams > 1 and sel.size else (0,):
                    idx = sel if self.n_streams == 1 else sel[st == s]
                    if idx.size == 0:
                        continue
                    idx = idx[np.argsort(self.rec_s[idx], kind="stable")]
                    fixed = self.fixed[idx]
                    seg.append((int(s), n, n + idx.size, fixed if fixed.any() else None, self.rec_s[idx]))
                    parts.append(idx)
                    n += idx.size
                segs.append(seg)
            order = np.concatenate(parts) if parts else np.zeros(0, np.int64)
            pos = np.zeros(self.dur.size, np.int64)
            pos[order] = np.arange(order.size)
            waits = [pos[w].tolist() for w in self._waits]  # a few ops each: plain lists
            self._segs = (segs, [str(g) for g in self.s_group.tolist()], order, waits)
        return self._segs

    def _queued(self, fix: Fix) -> tuple[np.ndarray, np.ndarray]:
        """In _segments' order: each op's running cost within its stretch and stream, with and without its own,
        under this fix's GPU speed-ups (the same for every host rate and profiler cost, so kept)."""
        key = repr(sorted(fix.gpu_speedup.items()))
        if key not in self._costs:
            dur = self.dur.copy()
            for kind, speed in fix.gpu_speedup.items():
                dur[self._kind_mask(kind)] /= speed
            cost = (dur + self.gap)[self._segments()[2]]
            c = np.zeros(cost.size)
            for seg in self._segments()[0]:
                for _, a, b, _, _ in seg:
                    c[a:b] = np.cumsum(cost[a:b])
            self._costs[key] = (c, c - cost)
        return self._costs[key]

    def _mark_segment(self) -> np.ndarray:
        """The stretch between blocking calls each step mark lies in."""
        bounds = np.concatenate([[-np.inf], self.s_ts, [np.inf]])
        return np.searchsorted(bounds, self.marks, side="right") - 1

    def _kind_mask(self, kind: str) -> np.ndarray:
        if kind not in self._masks:
            self._masks[kind] = self.kind == kind
        return self._masks[kind]

    def _steps_of(self, mark_rep: np.ndarray, end: np.ndarray) -> Outcome:
        if self._owner is None:  # the step that launched each op (-1: none, or run as recorded)
            owner = iv.owner(self.launch.astype(np.int64), self.marks[:, 0], self.marks[:, 1])
            owner[self.fixed] = -1
            ops = np.flatnonzero(owner >= 0)
            ops = ops[np.argsort(owner[ops], kind="stable")]  # grouped by step
            steps, first = np.unique(owner[ops], return_index=True)
            self._owner = (ops, steps, first)
        ops, steps, first = self._owner
        gpu_end = np.full(len(self.steps), -np.inf)
        if ops.size:  # each step's last GPU end
            gpu_end[steps] = np.maximum.reduceat(end[ops], first)
        out, prev = [], float(self.steps[0].start_ns)  # a left-out step before ends where it was recorded
        for i in range(len(self.steps)):
            s = max(prev, mark_rep[i, 0])
            e = max(mark_rep[i, 1], gpu_end[i], s)
            out.append(e - s)
            prev = e
        return Outcome(float(np.mean(out)), out)

    def _geometry(self, fix: Fix) -> _Geometry:
        """The host clock's breakpoints for this fix's host spans, and where each time the replay maps falls
        among them: the same for every host rate and profiler cost, so kept."""
        kinds = tuple(k for k in fix.host_rate if k in self.host_spans)
        with_cost = self.overhead_ns > 0 and self.density.size > 0
        key = (fix.loader_ready, tuple(sorted(set(kinds))), with_cost)
        if key not in self._geometries:
            self._geometries[key] = self._new_geometry(fix.loader_ready, kinds, with_cost)
        return self._geometries[key]

    def _new_geometry(self, loader_ready: bool, kinds: tuple[str, ...], with_cost: bool) -> _Geometry:
        spans = [self.sync_set()] + ([self.loader] if loader_ready else [])
        spans += [self.host_spans[k] for k in kinds]
        pts = [np.array([self.w0, self.w1], np.float64)]
        pts += [np.concatenate([s, e]).astype(np.float64) for s, e in spans]
        bp = np.unique(np.concatenate(pts))
        mid = (bp[:-1] + bp[1:]) / 2 if bp.size > 1 else bp
        inside: list[Optional[np.ndarray]] = []
        for s, e in spans:
            if s.size == 0:
                inside.append(None)
                continue
            k = np.searchsorted(s, mid, side="right") - 1
            inside.append((k >= 0) & (mid < e[np.clip(k, 0, None)]))
        g = _Geometry(bp, inside, kinds, bp)
        if with_cost:  # the clock's slopes change per bin of event density too
            g.pts = np.unique(np.concatenate([bp, self.bins]))
            g.slope_at = np.clip(np.searchsorted(bp, g.pts, side="right") - 1, 0, bp.size - 1)
            g.bin_at = np.clip(np.searchsorted(self.bins, g.pts, side="right") - 1, 0, self.density.size - 1)
        g.step = np.diff(g.pts)
        g.lumps_t = self.loader[0].astype(np.float64) if loader_ready else np.zeros(0)
        if g.lumps_t.size and self.loader_waited:  # a loader wait's own cost is counted at the call
            g.lumps_t = g.lumps_t[~np.isin(g.lumps_t, self.s_ts[self.s_group == "loader"])]
        g.lumps_c = np.concatenate([[0.0], np.cumsum(np.full(g.lumps_t.size, float(LOADER_READY_NS)))])
        times = {
            "launch": self.launch,
            "s_ts": self.s_ts,
            "s_te": self.s_te,
            "w0": np.array([float(self.w0)]),
            "marks": self.marks.astype(np.float64),
        }
        for name, t in times.items():
            k = np.clip(np.searchsorted(g.pts, t, side="right") - 1, 0, g.pts.size - 1)
            g.at[name] = (k, t - g.pts[k], g.lumps_c[np.searchsorted(g.lumps_t, t, side="left")])
        return g

    def _clock(self, g: _Geometry, fix: Fix, rate: float) -> Callable[[str], np.ndarray]:
        """Piecewise-linear replayed host time as a function of recorded host time (blocking calls excluded):
        name of the recorded times (the geometry's) -> their replayed times."""
        rates = [0.0] + ([0.0] if fix.loader_ready else []) + [fix.host_rate[k] * rate for k in g.kinds]
        slope = np.full(g.bp.size, float(rate))
        for inside, r in zip(g.inside, rates):
            if inside is not None:
                slope[:-1][inside] = np.minimum(slope[:-1][inside], r)
        # the profiler's cost per event taken out: each bin runs at 1 - cost x its density
        if g.slope_at is not None:
            w = self._weighted_density()[g.bin_at]
            slope = slope[g.slope_at] * np.clip(1.0 - self.overhead_ns * w, 0.0, 1.0)
        cum = np.concatenate([[0.0], np.cumsum(g.step * slope[:-1])])

        def clock(name: str) -> np.ndarray:
            k, off, lump = g.at[name]
            out: np.ndarray = cum[k] + off * slope[k] + lump
            return out

        return clock

    def sync_set(self) -> iv.Set:
        return iv.union(self.s_ts.astype(np.int64), self.s_te.astype(np.int64))
