"""Every GPU idle gap inside the steps, and what the host was doing during it."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..trace import EventTable
from . import _intervals as iv
from . import _roles as roles
from ._context import _Context
from ._model import IDLE_CAUSES, IdleLine, Step
from ._source import SourceLoc, SourceMap

# A sync "drains" a gap when it was already waiting as the GPU went idle: it began before the gap (within
# clock jitter) and returned within SYNC_TOLERANCE_NS of the gap opening or inside it.
SYNC_START_JITTER_NS = 2_000
SYNC_TOLERANCE_NS = 20_000
SHORT_GAP_NS = 250_000  # shorter idle gaps between kernels are per-op host overhead, not a block of host work


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
        self._sync_frames(np.sort(s0))
        self._attribute()
        self._drain()
        self._short_gaps_are_launches()
        self._sync_owner()
        for c in IDLE_CAUSES:
            per = np.zeros(len(steps), np.int64)
            np.add.at(per, self.step[self.step >= 0], self.ns[c][self.step >= 0])
            for i, s in enumerate(steps):
                s.idle_ns[c] = int(per[i])

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

    def _sync_frames(self, step_starts: np.ndarray) -> None:
        """The user-called frames (print, .item(), .cpu()...) that contain a blocking call.

        A call that spans the start of a step is the training loop itself (`trainer.fit()`, the user's
        `train()`): its host time is the loop's, not a read's, so it is left out."""
        ev, sync = self.ctx.ev, self.ctx.sync
        f = self.smap.call_frame(ev.tid[sync], ev.ts[sync]) if sync.size else np.zeros(0, np.int64)
        keep = f >= 0
        keep[keep] = ~_spans_a_start(self.smap.start[f[keep]], self.smap.end[f[keep]], step_starts)
        frames, first = np.unique(f[keep], return_index=True)
        order = np.argsort(self.smap.start[frames], kind="stable")
        self.sf_idx = frames[order]
        self.sf_sync = sync[keep][first][order]
        self.sf_set = iv.union(self.smap.start[self.sf_idx], self.smap.end[self.sf_idx])

    def _attribute(self) -> None:
        ctx, ev = self.ctx, self.ctx.ev
        launching_ops = ctx.op_of_ext(ev.ext[ctx.launch])
        launching_ops = np.unique(launching_ops[launching_ops >= 0])
        dl = ctx.spans(ctx.dataloader)
        for tid in np.unique(self.tid):
            sel = np.flatnonzero(self.tid == tid)
            remaining = (self.gs[sel], self.ge[sel])
            classes = [
                ("data_loading", dl),
                ("allocator", ctx.spans(ctx.allocator, tid)),
                ("sync", _merge(ctx.spans(ctx.sync, tid), self.sf_set)),
                (
                    "launch",
                    ctx.spans(
                        np.concatenate(
                            [
                                ctx.launch[ev.tid[ctx.launch] == tid],
                                launching_ops[ev.tid[launching_ops] == tid],
                            ]
                        )
                    ),
                ),
                ("cpu_ops", ctx.spans(ctx.cpu_ops, tid)),
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
        hit = (
            (j >= 0)
            & (s_start <= ws[jj] + SYNC_START_JITTER_NS)
            & (s_end >= ws[jj] - SYNC_TOLERANCE_NS)
            & (s_end <= we[jj] + SYNC_TOLERANCE_NS)
        )
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

    def lines(self, top: int = 10, by: str = "user") -> list[IdleLine]:
        """GPU idle by source line and cause, largest first: the user's line, or (by="library") the innermost
        library line below it (only idle that has one)."""
        keys: dict[
            tuple[Any, ...], int
        ] = {}  # (cause, loc) -> row; idle summed per row with numpy, not per event
        rows_of, ns_of = [], []
        for cause in IDLE_CAUSES:
            sel = np.flatnonzero(self.ns[cause] > 0)
            if sel.size == 0:
                continue
            locs = self._locate(cause, sel, by)
            # Few distinct locations (shared objects): one key per object, then a row per gap by numpy.
            _, first, inverse = np.unique(
                np.fromiter(map(id, locs), np.uint64, len(locs)), return_index=True, return_inverse=True
            )
            row_of_id = np.empty(first.size, np.int64)
            for u in np.argsort(
                first
            ).tolist():  # keys numbered in order of first appearance, as ties sort by it
                row_of_id[u] = keys.setdefault((cause, locs[first[u]]), len(keys))
            rows_of.append(row_of_id[inverse.reshape(-1)])
            ns_of.append(self.ns[cause][sel])
        row, ns = (
            (np.concatenate(rows_of), np.concatenate(ns_of).astype(np.int64))
            if rows_of
            else (np.zeros(0, np.int64),) * 2
        )
        idle, count = np.zeros(len(keys), dtype=np.int64), np.bincount(row, minlength=len(keys))
        np.add.at(idle, row, ns)
        rows = [
            IdleLine(c, loc, int(idle[r]), int(count[r]))
            for (c, loc), r in keys.items()
            if loc is not None or by == "user"
        ]
        rows.sort(key=lambda r: -r.idle_ns)
        return rows[:top]

    def _locate(self, cause: str, sel: np.ndarray, by: str = "user") -> list[Optional[SourceLoc]]:
        """The line each of these gaps' `cause` time is charged to: the blocking call's for sync time, the
        main thread's for data loading, else where the launching thread was when that time began."""
        ev = self.ctx.ev
        tids, times = self.tid[sel].copy(), self.rep_t[cause][sel].copy()
        if cause == "sync":
            d = self.sync_owner[sel]
            has = d >= 0
            tids[has], times[has] = ev.tid[d[has]], ev.ts[d[has]]
        if cause == "data_loading":
            tids[:] = self.main_tid
        locs = self.smap.locate(tids, times) if by == "user" else self.smap.library_lines(tids, times)
        missing = [i for i, loc in enumerate(locs) if loc is None] if by == "user" else []
        if missing:  # e.g. the autograd thread: the user line is the one that called backward()
            again = self.smap.locate(np.full(len(missing), self.main_tid), times[missing])
            for i, loc in zip(missing, again):
                locs[i] = loc
        return locs

    def main_cause(self) -> np.ndarray:
        """Each gap's main cause, as an index into IDLE_CAUSES: the one with the most of its time."""
        if self.count == 0:
            return np.zeros(0, np.int64)
        out: np.ndarray = np.argmax(np.stack([self.ns[c] for c in IDLE_CAUSES]), axis=0)
        return out

    def main_lines(self) -> list[Optional[SourceLoc]]:
        """Each gap's line for its main cause (as lines() charges that cause's time)."""
        main = self.main_cause()
        out: list[Optional[SourceLoc]] = [None] * self.count
        for k, cause in enumerate(IDLE_CAUSES):
            sel = np.flatnonzero(main == k)
            if sel.size:
                for i, loc in zip(sel.tolist(), self._locate(cause, sel)):
                    out[i] = loc
        return out


def _spans_a_start(start: np.ndarray, end: np.ndarray, step_starts: np.ndarray) -> np.ndarray:
    """For each [start, end): does a step start fall strictly inside it? (step_starts sorted)"""
    k = np.searchsorted(step_starts, start, side="right")
    return (k < step_starts.size) & (step_starts[np.clip(k, 0, step_starts.size - 1)] < end)


def _merge(a: iv.Set, b: iv.Set) -> iv.Set:
    return iv.union(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))


def _first_inside(a: iv.Set, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """First time within each window covered by a (or the window start)."""
    s, e = a
    if s.size == 0:
        out: np.ndarray = lo.copy()
        return out
    k = np.clip(np.searchsorted(e, lo, side="right"), 0, s.size - 1)
    t = np.maximum(lo, s[k])
    return np.where((e[k] > lo) & (t < hi), t, lo)


def _main_thread(ev: EventTable, ctx: _Context) -> int:
    host = np.concatenate([ctx.annotations, ctx.cpu_ops])  # ProfilerStep is a cpu_op/Operator in older traces
    marks = host[ev.mask_names(lambda n: roles.step_number(n) is not None)[host]]
    pool = marks if marks.size else ctx.cpu_ops
    if pool.size == 0:
        return -1
    tids, counts = np.unique(ev.tid[pool], return_counts=True)
    return int(tids[np.argmax(counts)])
