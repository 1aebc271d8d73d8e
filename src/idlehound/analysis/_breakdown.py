"""The exclusive step-time breakdown, claimed in priority order so the parts sum to the step."""

from __future__ import annotations

from typing import Optional

import numpy as np

from . import _intervals as iv
from . import _roles as roles
from ._context import _Context
from ._model import BREAKDOWN, Step


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
        "Kernel": ctx.spans(g[kcat & ~comm]),
        "Memcpy": ctx.spans(g[memcpy]),
        "Memset": ctx.spans(g[memset]),
        "Communication": ctx.spans(np.concatenate([g[comm], ctx.comm_ops])),
        "Runtime": ctx.spans(ctx.runtime),
        "DataLoader": ctx.spans(ctx.dataloader),
        "CPU Exec": ctx.spans(host_cpu),
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
