"""Memory: allocator churn and empty_cache() in the loop (they synchronize), and near-OOM peaks."""

from __future__ import annotations

from ..analysis import Analysis
from ._finding import Finding, Thresholds, finding, ms
from ._registry import CAUSES, Cause
from ._rule import GPU_EVENTS, MEMORY_EVENTS, Rule


def check_churn(a: Analysis, t: Thresholds) -> list[Finding]:
    f = _churn(a)
    return [f] if f is not None else []


def check_near_oom(a: Analysis, t: Thresholds) -> list[Finding]:
    f = _near_oom(a, t)
    return [f] if f is not None else []


def _churn(a: Analysis) -> Finding | None:
    sites = [s for s in a.sync_sites if s.kind == "allocator"]
    drained = ms(a, sum(s.idle_after_ns for s in sites))
    inside = ms(a, a.idle_ns.get("allocator", 0))
    idle = drained + inside
    if idle <= 0:
        return None
    m = a.memory
    evidence = [
        f"{m.allocator_calls / a.n_steps:.1f} cudaMalloc/cudaFree calls per step: the caching allocator "
        "keeps going back to the driver"
    ]
    if drained:
        evidence.append(f"cudaFree waits for the whole GPU: idle {drained:.3f} ms per step after those calls")
    if inside:
        evidence.append(f"GPU idle {inside:.3f} ms per step while the host was inside cudaMalloc/cudaFree")
    if m.empty_cache_calls:
        evidence.append(
            f"torch.cuda.empty_cache() called {m.empty_cache_calls / a.n_steps:.1f} times per step"
        )
    if m.allocs_per_step:
        evidence.append(f"{m.allocs_per_step:.0f} tensor allocations per step")
    # Advice names only calls this trace shows: empty_cache() is visible only through Python events.
    if m.empty_cache_calls:
        fix = (
            "Let the caching allocator keep its memory: remove torch.cuda.empty_cache() from the loop and keep "
            "tensor shapes stable so cached blocks are reused."
        )
        code = (
            "# delete: torch.cuda.empty_cache()\n# optional: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
        )
    else:
        fix = CAUSES[Cause.MEMORY_CHURN].fix
        code = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    where = "in the loop" if a.step_source == "ProfilerStep" else "in the profiled window"
    loc = next((s.location for s in sites if s.location), None)
    return finding(
        Cause.MEMORY_CHURN,
        a,
        idle,
        evidence,
        code,
        title=f"Memory churn: allocator calls {where}",
        fix=fix,
        location=loc,
        details={"drained_ms": drained, "inside_calls_ms": inside},
    )


def _near_oom(a: Analysis, t: Thresholds) -> Finding | None:
    m = a.memory
    if not m.recorded or not m.capacity or not m.peak_reserved or m.peak_allocated is None:
        return None  # (recorded samples set both peaks)
    share = m.peak_reserved / m.capacity
    if share < t.near_oom_share:
        return None
    evidence = [
        f"peak reserved {m.peak_reserved / 2**30:.1f} GiB of {m.capacity / 2**30:.1f} GiB "
        f"({100 * share:.0f}%); peak allocated {m.peak_allocated / 2**30:.1f} GiB"
    ]
    code = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True   # less fragmentation"
    return finding(Cause.NEAR_OOM, a, 0.0, evidence, code)


CHURN_RULE = Rule.of(
    Cause.MEMORY_CHURN,
    "allocator calls and empty_cache() in the loop synchronize",
    (GPU_EVENTS,),
    check_churn,
)
NEAR_OOM_RULE = Rule.of(
    Cause.NEAR_OOM, "peak reserved memory near the device's size", (MEMORY_EVENTS,), check_near_oom
)
