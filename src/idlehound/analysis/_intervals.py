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
    if not keep.all():
        s, e = s[keep], e[keep]
    del keep
    if s.size == 0:
        return EMPTY
    if not _sorted(s):
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
        del order
    run_end = np.maximum.accumulate(e)
    new = np.empty(s.size, dtype=bool)  # an interval that starts a group (masks: 1 byte where indices took 8)
    new[0] = True
    np.greater(s[1:], run_end[:-1], out=new[1:])
    last = np.empty(s.size, dtype=bool)  # the last interval of its group
    last[:-1] = new[1:]
    last[-1] = True
    return s[new], run_end[last]


def _sorted(x: np.ndarray) -> bool:
    """Whether x is in order (often so: events of one thread, every sweep's output); checked in chunks."""
    step = 2**20
    for i in range(0, x.size - 1, step):
        chunk = x[i : i + step + 1]
        if (chunk[1:] < chunk[:-1]).any():
            return False
    return True


def total(a: Set) -> int:
    return int((a[1] - a[0]).sum())


def _combine(a: Set, b: Set, want: int) -> Set:
    # Sweep: a contributes 1, b contributes 2; coverage value `want` selects the result. Coverage stays in
    # 0..3 (each set is disjoint), so the deltas and levels fit int8: 2 bytes a point where int64 took 16.
    pos = np.concatenate([a[0], a[1], b[0], b[1]])
    if pos.size == 0:
        return EMPTY
    na, nb = a[0].size, b[0].size
    delta = np.empty(pos.size, np.int8)
    delta[:na], delta[na : 2 * na], delta[2 * na : 2 * na + nb], delta[2 * na + nb :] = 1, -1, 2, -2
    # Points at one position may come in any order: the segments between them are empty and dropped below.
    order = np.argsort(pos, kind="stable")  # four sorted runs: a merge, and no second key to sort by
    pos, delta = pos[order], delta[order]
    del order
    level = np.cumsum(delta, dtype=np.int8)
    del delta
    keep = level[:-1] == want
    del level
    keep &= pos[1:] > pos[:-1]
    return union(pos[:-1][keep], pos[1:][keep])


def intersect(a: Set, b: Set) -> Set:
    return _combine(a, b, 3)


def subtract(a: Set, b: Set) -> Set:
    return _combine(a, b, 1)


def measure_in(a: Set, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """For each window [lo[i], hi[i]), the length of a inside it (windows may overlap)."""
    out: np.ndarray = _cumulative(a, np.asarray(hi, np.int64)) - _cumulative(a, np.asarray(lo, np.int64))
    return out


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
