"""Convolutions with cudnn.benchmark off: cuDNN's heuristic pick instead of the fastest algorithm."""

from __future__ import annotations

from ..analysis import Analysis
from ._finding import Finding, Thresholds, ms, pct


def check(a: Analysis, t: Thresholds) -> list[Finding]:
    # The trace does not say whether benchmark mode was on; only a capture by idlehound records it.
    if a.run_info.get("cudnn_benchmark") is not False:
        return []
    conv = sum(g.time_ns for g in a.kernels.top if _is_conv(g.name))
    if conv <= 0:
        return []
    conv_ms = ms(a, conv)
    saved = 0.1 * conv_ms  # a typical gain; the real one depends on the shapes
    evidence = [f"convolution kernels ran {conv_ms:.2f} ms per step ({pct(conv_ms / a.step_ms)} of the step) "
                "with torch.backends.cudnn.benchmark = False",
                "estimate: 10% of convolution time (measure with idlehound tune)"]
    fix = "With fixed input shapes, let cuDNN time its algorithms once and keep the fastest."
    code = "torch.backends.cudnn.benchmark = True"
    return [Finding("cudnn_benchmark", "cudnn.benchmark is off", saved, a.step_ms, evidence, fix, code,
                    kind="slow")]


def _is_conv(name: str) -> bool:
    n = name.lower()
    return any(s in n for s in ("conv", "fprop", "dgrad", "wgrad", "implicit_gemm"))
