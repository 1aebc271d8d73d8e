"""Interval algebra on numpy arrays of [start, end) pairs (integer ns).

A "set" is a pair (s, e) of sorted, disjoint, non-empty intervals. All functions are vectorised.
"""

from __future__ import annotations

import numpy as np

Set = tuple[np.ndarray, np.ndarray]
EMPTY: Set = (np.zeros(0, np.int64), np.zeros(0, np.int64))


def union(starts: np.ndarray, ends: np.ndarray) -> Set:
    """Merge any intervals into a sorted disjoint set. Empty intervals are dropped."""
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    keep = e > s
    s, e = s[keep], e[keep]
    if s.size == 0:
        return EMPTY
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    run_end = np.maximum.accumulate(e)
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    new[1:] = s[1:] > run_end[:-1]
    group_starts = np.flatnonzero(new)
    group_ends = np.append(group_starts[1:], s.size) - 1
    return s[group_starts], run_end[group_ends]


def total(a: Set) -> int:
    return int((a[1] - a[0]).sum())


def _combine(a: Set, b: Set, want: int) -> Set:
    # Sweep: a contributes 1, b contributes 2; coverage value `want` selects the result.
    pos = np.concatenate([a[0], a[1], b[0], b[1]])
    delta = np.concatenate([np.ones_like(a[0]), -np.ones_like(a[1]),
                            np.full_like(b[0], 2), np.full_like(b[1], -2)])
    if pos.size == 0:
        return EMPTY
    order = np.lexsort((delta, pos))
    pos, delta = pos[order], delta[order]
    level = np.cumsum(delta)
    seg_s, seg_e, seg_v = pos[:-1], pos[1:], level[:-1]
    keep = (seg_v == want) & (seg_e > seg_s)
    return union(seg_s[keep], seg_e[keep])


def intersect(a: Set, b: Set) -> Set:
    return _combine(a, b, 3)


def subtract(a: Set, b: Set) -> Set:
    return _combine(a, b, 1)


def measure_in(a: Set, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """For each window [lo[i], hi[i]), the length of a inside it (windows may overlap)."""
    return _cumulative(a, np.asarray(hi, np.int64)) - _cumulative(a, np.asarray(lo, np.int64))


def _cumulative(a: Set, t: np.ndarray) -> np.ndarray:
    """Length of a ∩ (-inf, t] for each t."""
    s, e = a
    if s.size == 0:
        return np.zeros(t.shape, dtype=np.int64)
    prefix = np.concatenate([[0], np.cumsum(e - s)])
    k = np.searchsorted(e, t, side="right")  # intervals wholly before t
    partial = np.zeros(t.shape, dtype=np.int64)
    inside = k < s.size
    kk = k[inside]
    partial[inside] = np.clip(t[inside] - s[kk], 0, None)
    return prefix[k] + partial


def split_at(a: Set, points: np.ndarray) -> Set:
    """Cut the intervals of a at the given points (used to keep gaps within one step)."""
    s, e = a
    if s.size == 0 or points.size == 0:
        return a
    pts = np.unique(points)
    inner = pts[(pts > s.min()) & (pts < e.max())]
    idx = np.searchsorted(s, inner, side="right") - 1
    ok = (idx >= 0) & (inner > s[np.clip(idx, 0, None)]) & (inner < e[np.clip(idx, 0, None)])
    cuts = inner[ok]
    if cuts.size == 0:
        return a
    bounds_s = np.sort(np.concatenate([s, cuts]))
    bounds_e = np.sort(np.concatenate([e, cuts]))
    return bounds_s, bounds_e


def owner(points: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Index of the window (sorted, disjoint) that holds each point, or -1."""
    i = np.searchsorted(starts, points, side="right") - 1
    ok = (i >= 0) & (points < ends[np.clip(i, 0, None)]) if starts.size else np.zeros(points.shape, bool)
    return np.where(ok, i, -1)
