"""Host-bound: Python or CPU-side ops keep the host busy while the GPU has nothing queued."""

from __future__ import annotations

from ..analysis import Analysis
from ._finding import Finding, Thresholds, finding, ms
from ._registry import Cause
from ._rule import GPU_EVENTS, Rule

EVIDENCE_LINES = 3  # source lines named in the evidence


def check(a: Analysis, t: Thresholds) -> list[Finding]:
    cpu = ms(a, a.idle_ns.get("cpu_ops", 0))
    py = ms(a, a.idle_ns.get("python", 0))
    idle = cpu + py
    if idle <= 0 or not a.gpu_recorded:
        return []
    lines = [ln for ln in a.idle_lines if ln.cause in ("cpu_ops", "python") and ln.location]
    evidence = [
        f"GPU idle {idle:.2f} ms per step while the host ran Python ({py:.2f} ms) "
        f"or CPU-side ops that launch no GPU work ({cpu:.2f} ms)"
    ]
    evidence += [f"{ln.location}: {ms(a, ln.idle_ns):.2f} ms per step" for ln in lines[:EVIDENCE_LINES]]
    rate = a.observer.get("host_rate", 1.0)
    if rate < t.observer_rate:
        evidence.append(
            f"unprofiled steps run host work at {rate:.2f}x its profiled time: part of this is the "
            "observer (the gain is predicted for the unprofiled step)"
        )
    code = "model = torch.compile(model)   # fewer Python and dispatcher round-trips per step"
    return [
        finding(
            Cause.HOST_BOUND,
            a,
            idle,
            evidence,
            code,
            location=lines[0].location if lines else None,
            details={"python_ms": py, "cpu_ops_ms": cpu},
        )
    ]


RULE = Rule.of(
    Cause.HOST_BOUND,
    "Python or CPU-only ops keep the host busy while the GPU has nothing queued",
    (GPU_EVENTS,),
    check,
)
