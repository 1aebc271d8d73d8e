"""Index arrays of the events each analysis needs, computed once per trace."""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..trace import EventTable
from . import _intervals as iv
from . import _roles as roles


class _Context:
    """Index arrays of the events each analysis needs, computed once."""

    def __init__(self, ev: EventTable) -> None:
        self.ev = ev
        n = len(ev)
        x = ev.ph == 0
        self.gpu = _ix(ev.mask_cat(*roles.GPU_CATS) & (ev.pid >= 0), n)
        self.gpu = self.gpu[np.argsort(ev.ts[self.gpu], kind="stable")]
        self.runtime = _ix(ev.mask_cat(*roles.RUNTIME_CATS), n)
        self.cpu_ops = _ix(ev.mask_cat(*roles.CPU_OP_CATS), n)
        self.annotations = _ix(ev.mask_cat("user_annotation"), n)
        self.python = _ix(ev.mask_cat("python_function"), n)
        x &= ev.pid >= 0
        x &= ~ev.mask_cat("gpu_user_annotation", "cuda_sync")
        x[self.gpu] = False
        self.x_cpu = _ix(x, n)
        del x
        rn = ev.name[self.runtime]
        self.launch = self.runtime[np.isin(rn, ev.name_ids(roles.is_launch))]
        self.sync = self.runtime[np.isin(rn, ev.name_ids(roles.is_sync_call))]
        self.sync = self.sync[np.argsort(ev.ts[self.sync], kind="stable")]
        self.allocator = self.runtime[np.isin(rn, ev.name_ids(roles.is_allocator_call))]
        # DataLoader __next__ is a user_annotation since PyTorch 1.10; 1.8/1.9 wrote it as an `Operator`.
        marks = np.concatenate([self.annotations, self.cpu_ops])
        self.dataloader = np.sort(marks[np.isin(ev.name[marks], ev.name_ids(roles.is_dataloader))])
        del marks
        gn = ev.name[self.gpu]
        kernel_cat = ev.cat_id("kernel"), ev.cat_id("Kernel")
        self.is_kernel = np.isin(ev.cat[self.gpu], kernel_cat)
        self.is_comm = np.isin(gn, ev.name_ids(roles.is_comm_kernel))
        host_ops = np.concatenate([self.cpu_ops, self.annotations])
        # Collectives: `nccl:all_reduce`/`gloo:all_reduce` annotations (often on a comm thread) and c10d ops.
        self.comm_ops = host_ops[np.isin(ev.name[host_ops], ev.name_ids(roles.is_comm_op))]
        del host_ops
        # correlation id -> runtime event, for GPU op -> launch lookups; External id -> cpu_op. Events without
        # the id (-1) never match, so they are left out (on a CPU-only trace that is every op).
        self._rt_corr_sorted, self._rt_by_corr = _by_key(ev.corr, self.runtime)
        self._op_ext_sorted, self._op_by_ext = _by_key(ev.ext, self.cpu_ops)

    def runtime_of(self, gpu_idx: np.ndarray) -> np.ndarray:
        """The runtime call that enqueued each GPU op (by correlation), or -1."""
        return _lookup(self._rt_corr_sorted, self._rt_by_corr, self.ev.corr[gpu_idx])

    def op_of_ext(self, ext: np.ndarray) -> np.ndarray:
        return _lookup(self._op_ext_sorted, self._op_by_ext, ext)

    def gpu_on(self, device: Optional[int]) -> np.ndarray:
        if device is None:
            return self.gpu
        out: np.ndarray = self.gpu[self.ev.pid[self.gpu] == device]
        return out

    def busy_set(self, device: Optional[int]) -> iv.Set:
        return self.spans(self.gpu_on(device))

    def spans(self, idx: np.ndarray, tid: Optional[int] = None) -> iv.Set:
        """The union of these events' intervals, host or GPU (on one thread when tid is given)."""
        if tid is not None:
            idx = idx[self.ev.tid[idx] == tid]
        starts = self.ev.ts[idx]
        ends = self.ev.dur[idx]
        ends += starts  # in place: one array fewer at a time on traces of millions of events
        return iv.union(starts, ends)


def _ix(mask: np.ndarray, n: int) -> np.ndarray:
    """Indices of the true entries; int32 while the table is small enough (half the memory of int64)."""
    idx = np.flatnonzero(mask)
    return idx.astype(np.int32) if n < 2**31 else idx


def _by_key(col: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(keys sorted, the events in that order) of the events in idx whose key is set."""
    keys = col[idx]
    has = keys != -1
    if not has.all():
        idx, keys = idx[has], keys[has]
    order = np.argsort(keys, kind="stable")
    return keys[order], idx[order]


def _lookup(keys_sorted: np.ndarray, values: np.ndarray, q: np.ndarray) -> np.ndarray:
    if keys_sorted.size == 0:
        return np.full(q.shape, -1, dtype=np.int64)
    pos = np.clip(np.searchsorted(keys_sorted, q), 0, keys_sorted.size - 1)
    ok = (keys_sorted[pos] == q) & (q != -1)
    return np.where(ok, values[pos], -1)
