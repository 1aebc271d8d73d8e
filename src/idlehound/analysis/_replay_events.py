"""What the replay reads from the events: the kind of each host event (the profiler's cost model), the kind of
each GPU op a fix speeds up, the host spans that launch GPU work, the fix that removes each blocking call, and the
last GPU op each blocking call waited for."""

from __future__ import annotations

import re

import numpy as np

from . import _intervals as iv
from . import _roles as roles
from ._context import _Context


def _last_done(
    idx: np.ndarray, launched: np.ndarray, done: np.ndarray, t0: np.ndarray, t1: np.ndarray
) -> np.ndarray:
    """For each call k, the last op of idx launched by t0[k] and done by t1[k] (-1: none). In stream order both
    times only grow, so that is a prefix: two binary searches; otherwise each call is checked in turn."""
    if idx.size == 0:
        return np.full(t0.size, -1, np.int64)
    if (launched[1:] >= launched[:-1]).all() and (done[1:] >= done[:-1]).all():
        last = (
            np.minimum(np.searchsorted(launched, t0, side="right"), np.searchsorted(done, t1, side="right"))
            - 1
        )
        return np.where(last >= 0, idx[np.clip(last, 0, None)], -1)
    out = np.full(t0.size, -1, np.int64)
    for k in range(t0.size):
        cand = idx[(launched <= t0[k]) & (done <= t1[k])]
        if cand.size:
            out[k] = cand[-1]
    return out


EVENT_KINDS = ("python_function", "cpu_op", "runtime", "user_annotation", "other")


def kind_codes(ctx: _Context) -> np.ndarray:
    """Every event's kind as its index in EVENT_KINDS (a later kind wins where sets overlap)."""
    out = np.full(ctx.ev.ts.size, EVENT_KINDS.index("other"), np.int8)
    for k, idx in (
        ("python_function", ctx.python),
        ("cpu_op", ctx.cpu_ops),
        ("runtime", ctx.runtime),
        ("user_annotation", ctx.annotations),
    ):
        out[idx] = EVENT_KINDS.index(k)
    return out


def _kind_histogram(ts: np.ndarray, kind: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Events per kind and bin: np.histogram's counts (last edge inclusive) for every kind in one pass."""
    nb = edges.size - 1
    t = ts.astype(np.float64)
    b = np.searchsorted(edges, t, side="right") - 1
    b[t == edges[-1]] = nb - 1
    ok = (b >= 0) & (b < nb)
    flat = np.bincount(kind[ok].astype(np.int64) * nb + b[ok], minlength=len(EVENT_KINDS) * max(nb, 0))
    return flat.reshape(len(EVENT_KINDS), max(nb, 0))


def _clip(a: iv.Set, lo: int, hi: int) -> iv.Set:
    return iv.intersect(a, (np.array([lo], np.int64), np.array([hi], np.int64))) if a[0].size else a


def _op_kinds(ctx: _Context, g: np.ndarray) -> np.ndarray:
    """'fp32' GEMM/conv kernels, 'conv' (other convolution kernels), 'pageable' HtoD copies, else ''."""
    ev = ctx.ev
    kinds = np.full(g.size, "", dtype=object)
    prec = {n: roles.matmul_precision(ev.names[n]) for n in np.unique(ev.name[g])}
    names = ev.name[g]
    is_fp32 = np.array([prec[n] == "fp32" for n in names], bool)
    ops = ctx.op_of_ext(ev.ext[g])
    conv_ids = ev.name_ids(lambda n: bool(roles.CONV_OP_RE.match(n)))
    is_conv = (ops >= 0) & np.isin(ev.name[np.clip(ops, 0, None)], conv_ids)
    pageable = np.isin(names, ev.name_ids(lambda n: "HtoD" in n and "Pageable" in n))
    kinds[is_conv] = "conv"
    kinds[is_fp32] = "fp32"
    kinds[pageable] = "pageable"
    return kinds


_FRAMEWORK_RE = re.compile(r"^(nn\.Module: |torch/(nn|optim|autograd)/)")


def launching_spans(ctx: _Context) -> iv.Set:
    """Host ops that launch GPU work (any nesting level), the launch/enqueue calls themselves, and the framework's
    Python around them (module calls, optimizer steps): what a CUDA graph or compiled step no longer runs."""
    ev = ctx.ev
    fw = ctx.python[np.isin(ev.name[ctx.python], ev.name_ids(lambda n: bool(_FRAMEWORK_RE.match(n))))]
    enq = ctx.runtime[np.isin(ev.name[ctx.runtime], ev.name_ids(roles.is_enqueue))]
    ops = ctx.cpu_ops
    has = np.zeros(ops.size, bool)
    for tid in np.unique(ev.tid[enq]):
        t = np.sort(ev.ts[enq][ev.tid[enq] == tid])
        on = ev.tid[ops] == tid
        a = np.searchsorted(t, ev.ts[ops][on], side="left")
        b = np.searchsorted(t, ev.ts[ops][on] + ev.dur[ops][on], side="left")
        has[np.flatnonzero(on)[b > a]] = True
    sel = np.concatenate([ops[has], enq, fw])
    return iv.union(ev.ts[sel], ev.ts[sel] + ev.dur[sel])


def sync_groups(ctx: _Context, own: np.ndarray, copy_names: dict[int, str]) -> np.ndarray:
    """For each blocking call in ctx.sync: the fix that removes it ('sync', 'pageable', 'allocator') or ''."""
    ev = ctx.ev
    s = ctx.sync
    ops = ctx.op_of_ext(ev.ext[s])
    out = np.full(s.size, "", dtype=object)
    for k, j in enumerate(s):
        if own[k]:
            continue
        op = ev.names[ev.name[ops[k]]] if ops[k] >= 0 else ""
        kind = roles.sync_kind(ev.names[ev.name[j]], op, copy_names.get(int(ev.ext[j]), ""))
        out[k] = {"allocator": "allocator", "pageable_h2d": "pageable"}.get(kind, "sync")
    return out
