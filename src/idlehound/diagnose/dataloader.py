"""Data loading: the GPU waits while the training loop waits for the next batch."""

from __future__ import annotations

import os
from typing import Any, Optional

from ..analysis import Analysis
from ._finding import Finding, Thresholds, ms, pct


def check(a: Analysis, t: Thresholds) -> list[Finding]:
    exposed = ms(a, a.idle_ns.get("data_loading", 0))
    if not a.gpu_recorded:
        exposed = ms(a, a.breakdown_ns.get("DataLoader", 0))
    if exposed <= 0:
        return []
    dl = a.dataloader
    cfg = a.run_info.get("dataloader") or {}
    workers = cfg.get("num_workers")
    evidence = [
        f"GPU idle {exposed:.2f} ms per step ({pct(exposed / a.step_ms)} of the step) while the loop waited in "
        f"DataLoader __next__ ({dl.calls} calls, {ms(a, dl.host_ns):.2f} ms per step on the host)",
    ]
    multi = dl.workers_in_use if workers is None else workers > 0
    if multi:
        evidence.append(f"worker processes are in use ({workers if workers is not None else 'count unknown'})"
                        "; they cannot keep up")
        fix, code = _more_workers(workers, cfg)
    else:
        evidence.append("batches are loaded in the main process (num_workers=0)")
        fix, code = _start_workers()
    title = "Data loading starves the GPU" if a.gpu_recorded else "Data loading takes a large share of the step"
    if not a.gpu_recorded:
        evidence[0] = (f"{exposed:.2f} ms per step ({pct(exposed / a.step_ms)} of the step) spent in DataLoader "
                       f"__next__ ({dl.calls} calls)")
    return [Finding("data_loading", title, exposed, a.step_ms, evidence, fix, code,
                    location=dl.location, details={"num_workers": workers, "iterator": dl.iterator})]


def _suggested_workers() -> int:
    cores = os.cpu_count() or 4
    return max(2, min(16, int(cores * 0.6)))


def _start_workers() -> tuple[str, str]:
    n = _suggested_workers()
    fix = ("Load batches in worker processes so they are ready before the GPU needs them, pin host memory "
           "and copy asynchronously.")
    code = (f"loader = DataLoader(dataset, batch_size=..., num_workers={n}, pin_memory=True,\n"
            "                    persistent_workers=True, prefetch_factor=4)\n"
            "x = x.to(device, non_blocking=True)")
    return fix, code


def _more_workers(workers: Optional[int], cfg: dict[str, Any]) -> tuple[str, str]:
    n = max(_suggested_workers(), (workers or 0) * 2)
    fix = ("The workers are too slow for the GPU. Add workers, keep them alive between epochs, prefetch more, "
           "and move per-sample work (decode, resize, augmentation) off the CPU: resize and normalise batches "
           "on the GPU, or store pre-decoded uint8 tensors.")
    code = (f"loader = DataLoader(dataset, batch_size=..., num_workers={n}, pin_memory=True,\n"
            "                    persistent_workers=True, prefetch_factor=4)\n"
            "# per-sample CPU transforms -> one batched GPU transform:\n"
            "x = x.to(device, non_blocking=True).float().div_(255)\n"
            "x = torch.nn.functional.interpolate(x, size=224, mode='bilinear')")
    if cfg and not cfg.get("pin_memory"):
        fix += " pin_memory is off: turn it on."
    return fix, code
