"""Convolutions with cudnn.benchmark off: cuDNN's heuristic pick instead of the fastest algorithm."""

from __future__ import annotations

from ..analysis import CONV_GAIN, Analysis
from ._finding import Finding, Thresholds, finding, ms, pct
from ._registry import Cause
from ._rule import GPU_EVENTS, RUN_JSON, Rule

TYPICAL_GAIN = CONV_GAIN  # share of convolution time benchmark mode typically saves; measure with the ladder


def check(a: Analysis, t: Thresholds) -> list[Finding]:
    # The trace does not say whether benchmark mode was on; only a capture by idlehound records it.
    if a.run_info.get("cudnn_benchmark") is not False or a.kernels.conv_ns <= 0:
        return []
    conv_ms = ms(a, a.kernels.conv_ns)
    if conv_ms < t.conv_share_for_cudnn * a.step_ms:
        return []
    evidence = [
        f"convolution kernels ran {conv_ms:.2f} ms per step ({pct(conv_ms / a.step_ms)} of the step) "
        "with torch.backends.cudnn.benchmark = False (recorded by idlehound run)",
        f"estimate: {100 * TYPICAL_GAIN:.0f}% of convolution time; the real gain depends on the shapes",
    ]
    code = "torch.backends.cudnn.benchmark = True"
    return [
        finding(
            Cause.CUDNN_BENCHMARK,
            a,
            TYPICAL_GAIN * conv_ms,
            evidence,
            code,
            location=a.kernels.conv_location,
            basis_ms=conv_ms,
            details={"conv_ms": conv_ms},
        )
    ]


RULE = Rule.of(
    Cause.CUDNN_BENCHMARK, "convolutions run with cudnn.benchmark off", (GPU_EVENTS, RUN_JSON), check
)
