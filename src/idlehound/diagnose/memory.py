"""Memory: allocator churn and empty_cache() in the loop (they synchronize), and near-OOM peaks."""

from __future__ import annotations

from typing import Optional

from ..analysis import Analysis
from ._finding import Finding, Thresholds, ms


def check(a: Analysis, t: Thresholds) -> list[Finding]:
    return [f for f in (_churn(a), _near_oom(a, t)) if f is not None]


def _churn(a: Analysis) -> Optional[Finding]:
    sites = [s for s in a.sync_sites if s.kind == "allocator"]
    drained = ms(a, sum(s.idle_after_ns for s in sites))
    inside = ms(a, a.idle_ns.get("allocator", 0))
    idle = drained + inside
    if idle <= 0:
        return None
    m = a.memory
    evidence = [f"{m.allocator_calls / a.n_steps:.1f} cudaMalloc/cudaFree calls per step: the caching allocator "
                "keeps going back to the driver"]
    if drained:
        evidence.append(f"cudaFree waits for the whole GPU: idle {drained:.3f} ms per step after those calls")
    if inside:
        evidence.append(f"GPU idle {inside:.3f} ms per step while the host was inside cudaMalloc/cudaFree")
    if m.empty_cache_calls:
        evidence.append(f"torch.cuda.empty_cache() called {m.empty_cache_calls / a.n_steps:.1f} times per step")
    if m.allocs_per_step:
        evidence.append(f"{m.allocs_per_step:.0f} tensor allocations per step")
    # Advice names only calls this trace shows: empty_cache() is visible only through Python events.
    if m.empty_cache_calls:
        fix = ("Let the caching allocator keep its memory: remove torch.cuda.empty_cache() from the loop and keep "
               "tensor shapes stable so cached blocks are reused.")
        code = "# delete: torch.cuda.empty_cache()\n# optional: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    else:
        fix = ("Let the caching allocator reuse its memory: keep tensor shapes stable so cached blocks fit, and "
               "let segments grow instead of allocating new ones.")
        code = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    where = "in the loop" if a.step_source == "ProfilerStep" else "in the profiled window"
    loc = next((s.location for s in sites if s.location), None)
    return Finding("memory_churn", f"Memory churn: allocator calls {where}", idle, a.step_ms, evidence, fix,
                   code, location=loc, details={"drained_ms": drained, "inside_calls_ms": inside})


def _near_oom(a: Analysis, t: Thresholds) -> Optional[Finding]:
    m = a.memory
    if not m.recorded or not m.capacity or not m.peak_reserved:
        return None
    share = m.peak_reserved / m.capacity
    if share < t.near_oom_share:
        return None
    evidence = [f"peak reserved {m.peak_reserved / 2**30:.1f} GiB of {m.capacity / 2**30:.1f} GiB "
                f"({100 * share:.0f}%); peak allocated {(m.peak_allocated or 0) / 2**30:.1f} GiB"]
    fix = ("Memory is nearly full: one larger batch or a fragmented cache will OOM. Use bf16 autocast, "
           "activation checkpointing, or a smaller batch with gradient accumulation.")
    code = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True   # less fragmentation"
    return Finding("near_oom", "Near out of memory", 0.0, a.step_ms, evidence, fix, code, kind="risk")
