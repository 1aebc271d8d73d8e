"""Pageable host-to-device copies: slow staging copies that also block the host."""

from __future__ import annotations

from ..analysis import Analysis
from ._finding import Finding, Thresholds, finding, ms
from ._registry import Cause
from ._rule import GPU_EVENTS, Rule


def check(a: Analysis, t: Thresholds) -> list[Finding]:
    h2d = a.copies.get("HtoD")
    if not h2d or h2d.pageable_count == 0:
        return []
    sites = [s for s in a.sync_sites if s.kind == "pageable_h2d"]
    idle = ms(a, sum(s.idle_after_ns for s in sites))
    pageable_share = h2d.pageable_bytes / h2d.bytes if h2d.bytes else 1.0
    copy_ms = ms(a, h2d.time_ns) * pageable_share
    saved_copy = copy_ms * (1 - 1 / t.pageable_speedup)
    loc = sites[0].location if sites else None
    evidence = [
        f"{h2d.pageable_count / a.n_steps:.1f} pageable host-to-device copies per step, "
        f"{h2d.pageable_bytes / a.n_steps / 1e6:.2f} MB per step ({100 * pageable_share:.0f}% of HtoD bytes)",
        f"HtoD copies took {ms(a, h2d.time_ns):.3f} ms per step"
        + (f" at {h2d.bandwidth_gbps:.1f} GB/s" if h2d.bandwidth_gbps else ""),
    ]
    if idle > 0:
        evidence.append(
            f"each copy blocks the host until it is done: GPU idle {idle:.3f} ms per step after them"
        )
    code = (
        "loader = DataLoader(..., pin_memory=True)\n"
        "x = x.to(device, non_blocking=True)\n"
        "# tensors you create yourself: torch.empty(..., pin_memory=True) or t.pin_memory()"
    )
    return [
        finding(
            Cause.PAGEABLE_COPY,
            a,
            idle + saved_copy,
            evidence,
            code,
            location=loc,
            details={
                "pageable_bytes_per_step": h2d.pageable_bytes / a.n_steps,
                "idle_after_ms": idle,
                "estimated_copy_saving_ms": saved_copy,
            },
        )
    ]


RULE = Rule.of(Cause.PAGEABLE_COPY, "host-to-device copies from pageable memory", (GPU_EVENTS,), check)
