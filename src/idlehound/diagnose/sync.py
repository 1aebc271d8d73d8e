"""CPU-GPU sync points: .item(), print(tensor), .cpu(), torch.cuda.synchronize() drain the GPU queue."""

from __future__ import annotations

from typing import Any

from ..analysis import Analysis, SyncSite
from ._finding import Finding, Thresholds, finding, ms
from ._registry import CAUSES, Cause
from ._rule import GPU_EVENTS, Rule

_HANDLED_ELSEWHERE = {"pageable_h2d", "allocator"}
EVIDENCE_SITES = 4  # sync sites named in the evidence (all are in details)

_WHAT = {
    "scalar_read": ".item() / print(tensor) / `if tensor:` reads a GPU value on the host",
    "print_tensor": "print() of a CUDA tensor formats it on the host, syncing several times",
    "d2h_copy": ".cpu() / .tolist() / .numpy() copies a GPU tensor to the host",
    "data_dependent_shape": "an op whose output size depends on GPU data (nonzero, boolean mask, unique)",
    "device_synchronize": "torch.cuda.synchronize() waits for all GPU work",
    "stream_synchronize": "a stream synchronize waits for the GPU",
    "other": "a blocking call waits for the GPU",
}
_FIX = {
    "print_tensor": (
        "Do not print CUDA tensors every step: accumulate on the GPU and print a Python "
        "number every N steps.",
        "running_loss += loss.detach()\n"
        "if step % 100 == 0:\n"
        '    print(f"loss {running_loss.item() / 100:.4f}")\n'
        "    running_loss.zero_()",
    ),
    "scalar_read": (
        "Keep values on the GPU inside the loop and read them every N steps; never print a CUDA "
        "tensor each step.",
        "running_loss += loss.detach()          # no sync\n"
        "if step % 100 == 0:\n"
        "    print(running_loss.item() / 100)   # one sync per 100 steps\n"
        "    running_loss.zero_()",
    ),
    "d2h_copy": (
        "Copy to the host only when needed, asynchronously into pinned memory.",
        "host_buf = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)\n"
        "host_buf.copy_(t, non_blocking=True)   # read it after a later sync",
    ),
    "data_dependent_shape": (
        "Use fixed-shape ops so the host need not learn the output size.",
        "y = torch.where(mask, x, torch.zeros_like(x))   # instead of x[mask]",
    ),
    "device_synchronize": (
        "Remove torch.cuda.synchronize() from the loop; time with CUDA events.",
        "start = torch.cuda.Event(enable_timing=True); end = torch.cuda.Event(enable_timing=True)\n"
        "start.record(); train_step(); end.record()   # read end.elapsed_time later",
    ),
}


def check(a: Analysis, t: Thresholds) -> list[Finding]:
    sites = [s for s in a.sync_sites if s.kind not in _HANDLED_ELSEWHERE and s.idle_after_ns > 0]
    if not sites:
        return []
    sites.sort(key=lambda s: -s.idle_after_ns)
    idle = ms(a, sum(s.idle_after_ns for s in sites))
    calls = sum(s.count for s in a.sync_sites if s.kind not in _HANDLED_ELSEWHERE) / a.n_steps
    evidence = [
        f"{calls:.1f} blocking host reads per step; GPU idle {idle:.3f} ms per step while the host "
        "waited for them and then caught up"
    ]
    evidence += [_site_line(a, s) for s in sites[:EVIDENCE_SITES]]
    top = sites[0]
    fix, code = _FIX.get(top.kind, (CAUSES[Cause.SYNC].fix, ""))
    return [
        finding(
            Cause.SYNC,
            a,
            idle,
            evidence,
            code,
            fix=fix,
            location=top.location,
            details={"sites": [_site_json(a, s) for s in sites], "calls_per_step": calls},
        )
    ]


def _site_line(a: Analysis, s: SyncSite) -> str:
    where = str(s.location) if s.location else "unknown line"
    via = s.python or s.op or s.call
    return (
        f"{where}: {via} ({_WHAT.get(s.kind, _WHAT['other'])}), {s.count / a.n_steps:.1f}/step, "
        f"{ms(a, s.idle_after_ns):.3f} ms idle per step"
    )


def _site_json(a: Analysis, s: SyncSite) -> dict[str, Any]:
    return {
        "kind": s.kind,
        "op": s.op,
        "call": s.call,
        "python": s.python,
        "location": s.location.to_json() if s.location else None,
        "count_per_step": s.count / a.n_steps,
        "idle_ms_per_step": ms(a, s.idle_after_ns),
    }


RULE = Rule.of(Cause.SYNC, "blocking host reads of GPU values drain the GPU queue", (GPU_EVENTS,), check)
