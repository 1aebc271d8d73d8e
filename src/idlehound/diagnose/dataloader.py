"""Data loading: the GPU waits while the training loop waits for the next batch."""

from __future__ import annotations

import os
from typing import Any, Optional

from ..analysis import LOADER_READY_NS, Analysis
from ._finding import Finding, Thresholds, finding, ms, pct
from ._registry import CAUSES, Cause
from ._rule import Rule


def check(a: Analysis, t: Thresholds) -> list[Finding]:
    spent, exposed = _loader_ms(a)
    if exposed <= 0:
        return []
    dl = a.dataloader
    cfg = a.run_info.get("dataloader") or {}
    workers = cfg.get("num_workers")
    evidence = [_first_line(a, spent, exposed)]
    multi = dl.workers_in_use if workers is None else workers > 0
    if multi:
        evidence.append(
            f"worker processes are in use ({workers if workers is not None else 'count unknown'})"
            "; they cannot keep up"
        )
        fix, code = _more_workers(workers, cfg, recorded_cores(a))
    else:
        evidence.append("batches are loaded in the main process (num_workers=0)")
        fix, code = _start_workers(recorded_cores(a))
    if not a.gpu_recorded:
        evidence.append(
            f"taking a batch that workers prepared ahead still costs the loop about {LOADER_READY_NS / 1e6:.2f} ms "
            f"per call (the replay's figure): {exposed:.2f} ms per step to gain"
        )
    title = (
        CAUSES[Cause.DATA_LOADING].title if a.gpu_recorded else "Data loading takes a large share of the step"
    )
    return [
        finding(
            Cause.DATA_LOADING,
            a,
            exposed,
            evidence,
            code,
            title=title,
            fix=fix,
            location=dl.location,
            details={"num_workers": workers, "iterator": dl.iterator},
        )
    ]


def _loader_ms(a: Analysis) -> tuple[float, float]:
    """(ms per step the loop spent waiting for batches, ms per step a fix gives back). With GPU events: the GPU
    idle time while the loop waited (the replay then predicts the gain). Without: the host's time in the
    loader, less what taking a batch that workers prepared ahead still costs (LOADER_READY_NS, as the replay
    models it), so an in-memory dataset whose batches cost about that much is not reported."""
    if a.gpu_recorded:
        exposed = ms(a, a.idle_ns.get("data_loading", 0))
        return exposed, exposed
    spent = ms(a, a.breakdown_ns.get("DataLoader", 0))
    return spent, max(spent - ms(a, a.dataloader.calls * LOADER_READY_NS), 0.0)


def _first_line(a: Analysis, spent: float, exposed: float) -> str:
    dl = a.dataloader
    if not a.gpu_recorded:
        return (
            f"{spent:.2f} ms per step ({pct(spent / a.step_ms)} of the step) spent in DataLoader "
            f"__next__ ({dl.calls} calls)"
        )
    return (
        f"GPU idle {exposed:.2f} ms per step ({pct(exposed / a.step_ms)} of the step) while the loop waited in "
        f"DataLoader __next__ ({dl.calls} calls, {ms(a, dl.host_ns):.2f} ms per step on the host)"
    )


MIN_WORKERS, MAX_WORKERS = 2, 16  # fewer gives no overlap; more rarely helps one GPU and costs memory


def usable_cores() -> int:
    """The cores this process may run on (its affinity), not the machine's count."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def suggested_workers(cores: Optional[int] = None) -> int:
    """The DataLoader worker count idlehound suggests: half the usable cores, from 2 to 16.

    The one answer the diagnosis, lint's advice, `tune` and `ladder` start from (they measure around it)."""
    n = usable_cores() if cores is None else cores
    return max(MIN_WORKERS, min(MAX_WORKERS, n // 2))


def worker_sweep(cores: int) -> list[int]:
    """The worker counts `tune` and `ladder` measure: a quarter and three quarters of the cores around the
    suggestion, at least 2."""
    return sorted({max(MIN_WORKERS, cores // 4), suggested_workers(cores), max(MIN_WORKERS, cores * 3 // 4)})


UNKNOWN_CORES = 16  # a trace without its run folder does not say how many cores its machine had


def recorded_cores(a: Analysis) -> int:
    """The CPU count of the machine that ran the loop, as its run folder recorded it: the worker count a
    diagnosis suggests comes from the run, not from the machine that analyses it."""
    cores = (a.run_info.get("environment") or {}).get("cpu_count")
    return cores if isinstance(cores, int) and cores > 0 else UNKNOWN_CORES


def _start_workers(cores: int) -> tuple[str, str]:
    n = suggested_workers(cores)
    fix = CAUSES[Cause.DATA_LOADING].fix
    code = (
        f"loader = DataLoader(dataset, batch_size=..., num_workers={n}, pin_memory=True,\n"
        "                    persistent_workers=True, prefetch_factor=4)\n"
        "x = x.to(device, non_blocking=True)"
    )
    return fix, code


def _more_workers(workers: Optional[int], cfg: dict[str, Any], cores: int) -> tuple[str, str]:
    n = max(suggested_workers(cores), (workers or 0) * 2)  # workers that cannot keep up: at least double
    fix = (
        "The workers are too slow for the GPU. Add workers, keep them alive between epochs, prefetch more, "
        "and move per-sample work (decode, resize, augmentation) off the CPU: resize and normalise batches "
        "on the GPU, or store pre-decoded uint8 tensors."
    )
    code = (
        f"loader = DataLoader(dataset, batch_size=..., num_workers={n}, pin_memory=True,\n"
        "                    persistent_workers=True, prefetch_factor=4)\n"
        "# per-sample CPU transforms -> one batched GPU transform:\n"
        "x = x.to(device, non_blocking=True).float().div_(255)\n"
        "x = torch.nn.functional.interpolate(x, size=224, mode='bilinear')"
    )
    if cfg and not cfg.get("pin_memory"):
        fix += " pin_memory is off: turn it on."
    return fix, code


# Without GPU events it reads the host's DataLoader time instead of exposed idle: it needs nothing more.
RULE = Rule.of(Cause.DATA_LOADING, "the loop waits for the next batch", match=check)
