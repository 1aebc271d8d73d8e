"""Convolutions with cudnn.benchmark off: cuDNN's heuristic pick instead of the fastest algorithm."""

from __future__ import annotations

from ..analysis import Analysis
from ._finding import Finding, Thresholds, ms, pct

TYPICAL_GAIN = 0.10  # share of convolution time benchmark mode typically saves; measure with the ladder


def check(a: Analysis, t: Thresholds) -> list[Finding]:
    # The trace does not say whether benchmark mode was on; only a capture by idlehound records it.
    if a.run_info.get("cudnn_benchmark") is not False or a.kernels.conv_ns <= 0:
        return []
    conv_ms = ms(a, a.kernels.conv_ns)
    if conv_ms < t.conv_share_for_cudnn * a.step_ms:
        return []
    evidence = [f"convolution kernels ran {conv_ms:.2f} ms per step ({pct(conv_ms / a.step_ms)} of the step) "
                "with torch.backends.cudnn.benchmark = False (recorded by idlehound run)",
                f"estimate: {100 * TYPICAL_GAIN:.0f}% of convolution time; the real gain depends on the shapes"]
    fix = "With fixed input shapes, let cuDNN time its algorithms once and keep the fastest."
    code = "torch.backends.cudnn.benchmark = True"
    return [Finding("cudnn_benchmark", "cudnn.benchmark is off", TYPICAL_GAIN * conv_ms, a.step_ms, evidence,
                    fix, code, location=a.kernels.conv_location, kind="slow", basis_ms=conv_ms,
                    details={"conv_ms": conv_ms})]
