"""Launch-bound: kernels so short the GPU finishes each before the host can launch the next."""

from __future__ import annotations

from ..analysis import Analysis
from ._finding import Finding, Thresholds, finding, ms, pct
from ._registry import Cause
from ._rule import GPU_EVENTS, Rule


def check(a: Analysis, t: Thresholds) -> list[Finding]:
    k = a.kernels
    # One-off slow launches (first launch, code-object load) are not the overhead of many tiny kernels.
    idle = ms(a, max(a.idle_ns.get("launch", 0) - k.slow_launch_idle_ns, 0))
    if idle <= 0 or k.count == 0 or (k.slow_launches and a.n_steps == 1):
        return []  # a lone step with one-off launches is warm-up: its dispatch times say nothing steady
    evidence = [
        f"{k.count / a.n_steps:.0f} kernels per step, median {k.p50_us:.1f} µs",
        f"GPU idle {idle:.2f} ms per step while the host was in op dispatch and kernel launch calls",
    ]
    if k.slow_launches:
        evidence.append(
            f"not counted: {k.slow_launches} one-off launch call(s) of up to {k.slow_launch_max_us / 1e3:.2f} ms "
            "(first launch or code-object load)"
        )
    if k.shorter_than_launch is not None:
        evidence.append(
            f"{pct(k.shorter_than_launch)} of kernels ran shorter than the call that launched them"
        )
    code = (
        'model = torch.compile(model, mode="reduce-overhead")   # fuses ops and replays CUDA graphs\n'
        "opt = torch.optim.AdamW(model.parameters(), fused=True)  # one kernel for all parameters"
    )
    loc = next((ln.location for ln in a.idle_lines if ln.cause == "launch" and ln.location), None)
    return [
        finding(
            Cause.LAUNCH_BOUND,
            a,
            idle,
            evidence,
            code,
            location=loc,
            details={
                "kernels_per_step": k.count / a.n_steps,
                "median_kernel_us": k.p50_us,
                "shorter_than_launch": k.shorter_than_launch,
            },
        )
    ]


RULE = Rule.of(
    Cause.LAUNCH_BOUND,
    "kernels so short the GPU finishes each before the next is launched",
    (GPU_EVENTS,),
    check,
)
