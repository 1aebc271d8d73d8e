"""Copies, kernels (precision, SM efficiency, occupancy), memory and the DataLoader, within the steps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import numpy as np

from ..trace import EventTable, Trace
from . import _intervals as iv
from . import _roles as roles
from . import _validate as validate
from ._context import _Context
from ._model import CopyStats, DataLoaderStats, DeviceInfo, KernelGroup, KernelStats, MemoryStats, Step
from ._source import SourceLoc, SourceMap

TOP_KERNELS = 10  # kernel families listed in the report
MAX_CURVE_POINTS = 2000  # memory-curve points kept: enough to draw, bounded for huge traces


def _in_steps(ev: EventTable, idx: np.ndarray, s0: np.ndarray, s1: np.ndarray) -> np.ndarray:
    return idx[iv.owner(ev.ts[idx], s0, s1) >= 0]


def _copies(
    ctx: _Context, s0: np.ndarray, s1: np.ndarray, notes: Optional[list[str]] = None
) -> dict[str, CopyStats]:
    ev = ctx.ev
    mc = ctx.gpu[np.isin(ev.cat[ctx.gpu], [ev.cat_id("gpu_memcpy"), ev.cat_id("Memcpy")])]
    mc = _in_steps(ev, mc, s0, s1)
    sizes = validate.copy_bytes(
        ev.nbytes[mc], ev.dur[mc].astype(np.float64), notes if notes is not None else []
    )
    out: dict[str, CopyStats] = {}
    for j, nbytes in zip(mc, sizes.tolist()):
        name = ev.names[ev.name[j]]
        direction = next((d for d in ("HtoD", "DtoH", "DtoD", "PtoP", "HtoH") if d in name), "other")
        c = out.setdefault(direction, CopyStats(direction))
        c.count += 1
        c.bytes += nbytes
        c.time_ns += int(ev.dur[j])
        if "Pageable" in name:
            c.pageable_bytes += nbytes
            c.pageable_count += 1
    return out


def _kernels(
    ctx: _Context,
    s0: np.ndarray,
    s1: np.ndarray,
    device: DeviceInfo,
    smap: Optional[SourceMap] = None,
    main_tid: int = -1,
    notes: Optional[list[str]] = None,
) -> KernelStats:
    ev = ctx.ev
    k = ctx.gpu[ctx.is_kernel]
    if device.index is not None:
        k = k[ev.pid[k] == device.index]
    k = _in_steps(ev, k, s0, s1)
    inside = _clipped(ev, k, s0, s1)  # kernel time within the steps: a kernel cannot outlast its step
    st = KernelStats(count=int(k.size), time_ns=int(inside.sum()))
    if k.size == 0:
        return st
    d_us = inside / 1e3
    st.p50_us, st.p90_us, st.max_us = (float(np.percentile(d_us, q)) for q in (50, 90, 100))
    rt = ctx.runtime_of(k)
    direct = (
        (rt >= 0)
        & np.isin(rt, ctx.launch)
        & ~np.isin(ev.name[np.clip(rt, 0, None)], ev.name_ids(lambda n: "Graph" in n))
    )
    if direct.any():
        st.launches_with_duration = int(direct.sum())
        st.shorter_than_launch = float((ev.dur[k][direct] < ev.dur[rt[direct]]).mean())
    _kernel_groups(ctx, k, st, smap, main_tid)
    _sm_metrics(ev, k, s0, s1, st, notes if notes is not None else [])
    return st


def _clipped(ev: EventTable, idx: np.ndarray, s0: np.ndarray, s1: np.ndarray) -> np.ndarray:
    """Durations (float ns) of events cut to the step their start falls in."""
    if idx.size == 0:
        return np.zeros(0)
    o = iv.owner(ev.ts[idx], s0, s1)
    end = np.minimum(ev.ts[idx] + ev.dur[idx], s1[o])
    out: np.ndarray = np.maximum(end - ev.ts[idx], 0).astype(np.float64)
    return out


def _kernel_groups(
    ctx: _Context, k: np.ndarray, st: KernelStats, smap: Optional[SourceMap], main_tid: int
) -> None:
    ev = ctx.ev
    names, inv = np.unique(ev.name[k], return_inverse=True)
    time = np.bincount(inv, weights=ev.dur[k]).astype(np.int64)
    count = np.bincount(inv)
    fam: dict[str, list[Any]] = {}
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
    _tensor_cores_by_dtype(ctx, k, st, fam)
    st.top = sorted((_group(n, v) for n, v in fam.items()), key=lambda g: -g.time_ns)[:TOP_KERNELS]
    st.fp32_matmul_ops, fp32_ops = _fp32_ops(ctx, k)
    if smap is not None:
        st.fp32_location = _op_location(ctx, smap, fp32_ops, main_tid)
    ops = ctx.op_of_ext(ev.ext[k])
    conv_ids = ev.name_ids(lambda n: bool(roles.CONV_OP_RE.match(n)))
    is_conv = (ops >= 0) & np.isin(ev.name[np.clip(ops, 0, None)], conv_ids)
    st.conv_ns = int(ev.dur[k][is_conv].sum(dtype=np.float64))
    if smap is not None and is_conv.any():
        st.conv_location = _op_location(ctx, smap, np.unique(ops[is_conv]), main_tid)


def _tensor_cores_by_dtype(ctx: _Context, k: np.ndarray, st: KernelStats, fam: dict[str, list[Any]]) -> None:
    """GEMM/conv kernels whose name does not tell their precision (nvjet-like names without a dtype): a
    half/bf16/fp8 matmul or convolution op that launched them ran them on tensor cores (docs/metrics.md)."""
    ev = ctx.ev
    unsure = {
        nid
        for nid in np.unique(ev.name[k]).tolist()
        if roles.is_matmul_kernel(ev.names[nid]) and not roles.matmul_precision(ev.names[nid])
    }
    if not unsure:
        return
    kk = k[np.isin(ev.name[k], list(unsure))]
    ops = ctx.op_of_ext(ev.ext[kk])
    types = ev.input_types(ops)
    for j, o, t in zip(kk.tolist(), ops.tolist(), types):
        if o < 0 or not roles.MATMUL_OP_RE.match(ev.names[ev.name[o]]):
            continue
        if roles.dtype_precision(t) == "tensor_core":
            st.tensor_core_ns += int(ev.dur[j])
            fam[roles.kernel_family(ev.names[ev.name[j]])][2] = "tensor_core"


def _group(name: str, v: list[Any]) -> KernelGroup:

    return KernelGroup(name=name, time_ns=v[0], count=v[1], precision=v[2])


def _fp32_ops(ctx: _Context, k: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Ops (by name) whose fp32 inputs ran on CUDA-core GEMM/conv kernels, and those ops (event indices)."""
    ev = ctx.ev
    prec = {nid: roles.matmul_precision(ev.names[nid]) for nid in np.unique(ev.name[k])}
    fk = k[np.array([prec[n] == "fp32" for n in ev.name[k]], dtype=bool)]
    ops = ctx.op_of_ext(ev.ext[fk])
    names, kept = set(), []
    ops = ops[ops >= 0]
    for o, types in zip(ops.tolist(), ev.input_types(ops)):
        if not types or "float" in types:
            names.add(ev.names[ev.name[o]])
            kept.append(int(o))
    return sorted(names), np.array(kept, dtype=np.int64)


def _op_location(ctx: _Context, smap: SourceMap, ops: np.ndarray, main_tid: int) -> Optional[SourceLoc]:
    """The user line of the longest of these ops (ops on the autograd thread: the line that ran backward)."""
    if ops.size == 0 or smap.n == 0:
        return None
    ev = ctx.ev
    o = ops[np.argmax(ev.dur[ops])]
    loc = smap.locate(ev.tid[o : o + 1], ev.ts[o : o + 1])[0]
    return loc or smap.locate(np.array([main_tid]), ev.ts[o : o + 1])[0]


def _sparse_col(values: Mapping[int, float], k: np.ndarray) -> np.ndarray:
    """values[j] for each j in k (nan where absent), without a dict lookup per event."""
    if not values:
        return np.full(len(k), np.nan)
    keys = np.fromiter(values.keys(), np.int64, len(values))
    vals = np.fromiter(values.values(), np.float64, len(values))
    order = np.argsort(keys, kind="stable")
    keys, vals = keys[order], vals[order]
    pos = np.minimum(np.searchsorted(keys, k), len(keys) - 1)
    return np.where(keys[pos] == k, vals[pos], np.nan)


def _sm_metrics(
    ev: EventTable, k: np.ndarray, s0: np.ndarray, s1: np.ndarray, st: KernelStats, notes: list[str]
) -> None:
    bps = _sparse_col(ev.extra["blocks_per_sm"], k)
    occ = validate.occupancy(_sparse_col(ev.extra["occupancy"], k), notes)
    dur = ev.dur[k].astype(np.float64)
    window = float((s1 - s0).sum())
    ok = np.isfinite(bps) & (bps > 0) | np.isinf(bps)
    if ok.any() and window > 0:
        end = ev.ts[k] + _clipped(ev, k, s0, s1).astype(np.int64)  # only the time inside the steps counts
        pos = np.concatenate([ev.ts[k][ok], end[ok]])
        val = np.minimum(np.where(np.isinf(bps[ok]), 1.0, bps[ok]), 1e9)
        delta = np.concatenate([val, -val])
        order = np.argsort(pos, kind="stable")
        level = np.cumsum(delta[order])
        seg = np.diff(pos[order]).astype(np.float64)
        st.sm_efficiency = float((np.minimum(level[:-1], 1.0) * seg).sum() / window)
    ok = np.isfinite(occ) & (occ >= 0)
    if ok.any() and dur[ok].sum() > 0:
        st.occupancy = float((occ[ok] * dur[ok]).sum() / dur[ok].sum())


def _memory(
    ctx: _Context,
    trace: Trace,
    s0: np.ndarray,
    s1: np.ndarray,
    device: DeviceInfo,
    smap: SourceMap,
    steps: list[Step],
    notes: Optional[list[str]] = None,
) -> MemoryStats:
    ev = ctx.ev
    m = MemoryStats(capacity=device.memory_bytes)
    mem = np.flatnonzero(
        (ev.ph == 1) & (ev.name == (ev.names.index("[memory]") if "[memory]" in ev.names else -9))
    )
    dt = ev.extra["device_type"]
    cuda = np.array([j for j in mem if dt.get(int(j)) == 1], dtype=np.int64)
    if cuda.size:
        alloc = np.array([float(ev.extra["total_allocated"][int(j)] or 0) for j in cuda])
        resv = np.array([float(ev.extra["total_reserved"][int(j)] or 0) for j in cuda])
        cuda = cuda[
            validate.memory_samples(alloc, resv, device.memory_bytes, notes if notes is not None else [])
        ]
    if cuda.size:
        m.recorded = True
        m.peak_allocated = float(max(ev.extra["total_allocated"][int(j)] or 0 for j in cuda))
        m.peak_reserved = float(max(ev.extra["total_reserved"][int(j)] or 0 for j in cuda))
        inside = _in_steps(ev, cuda, s0, s1)
        m.allocs_per_step = float((ev.nbytes[inside] > 0).sum()) / max(s0.size, 1)
        pts = inside[np.argsort(ev.ts[inside], kind="stable")]
        pts = pts[:: max(1, pts.size // MAX_CURVE_POINTS)]
        t0 = steps[0].start_ns if steps else 0
        m.curve = [[int(ev.ts[j] - t0), float(ev.extra["total_allocated"].get(int(j)) or 0)] for j in pts]
    m.empty_cache_calls = int(np.isin(ev.name[ctx.python], ev.name_ids(lambda n: "empty_cache" in n)).sum())
    m.allocator_calls = int(_in_steps(ev, ctx.allocator, s0, s1).size)
    return m


def _dataloader(ctx: _Context, smap: SourceMap, s0: np.ndarray, s1: np.ndarray) -> DataLoaderStats:
    ev = ctx.ev
    dl = _in_steps(ev, ctx.dataloader, s0, s1)
    st = DataLoaderStats(host_ns=int(ev.dur[dl].sum(dtype=np.float64)), calls=int(dl.size))
    if dl.size:
        name = ev.names[ev.name[dl[0]]]
        st.iterator = name.split("#", 1)[1].split(".", 1)[0] if "#" in name else ""
        st.location = smap.locate(ev.tid[dl[:1]], ev.ts[dl[:1]] + 1)[0]
    return st
