"""The exclusive step-time breakdown, claimed in priority order so the parts sum to the step."""

from __future__ import annotations

from typing import Callable, Optional

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
    host = np.zeros(
        len(ev), bool
    )  # masks over the events, not np.isin of event lists (sorted copies of each)
    host[ctx.x_cpu] = True
    host &= ~ev.mask_names(lambda n: roles.step_number(n) is not None)
    host[ctx.runtime] = False
    host[ctx.dataloader] = False
    host_cpu = np.flatnonzero(host)
    del host
    members: dict[
        str, Callable[[], np.ndarray]
    ] = {  # each category's span set is built when its turn comes and dropped after (one at a time)
        "Kernel": lambda: g[kcat & ~comm],
        "Memcpy": lambda: g[memcpy],
        "Memset": lambda: g[memset],
        "Communication": lambda: np.concatenate([g[comm], ctx.comm_ops]),
        "Runtime": lambda: ctx.runtime,
        "DataLoader": lambda: ctx.dataloader,
        "CPU Exec": lambda: host_cpu,
    }
    s0 = np.array([s.start_ns for s in steps], np.int64)
    s1 = np.array([s.end_ns for s in steps], np.int64)
    remaining = iv.union(s0, s1)
    per = {}
    for name in BREAKDOWN[:-1]:
        spans = ctx.spans(members[name]())
        claimed = iv.intersect(remaining, spans)
        per[name] = iv.measure_in(claimed, s0, s1)
        del claimed
        remaining = iv.subtract(remaining, spans)
        del spans
    per["Other"] = iv.measure_in(remaining, s0, s1)
    for i, s in enumerate(steps):
        s.breakdown_ns = {k: int(per[k][i]) for k in BREAKDOWN}
