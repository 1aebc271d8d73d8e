"""fp32 matrix math on CUDA cores while tensor cores sit unused."""

from __future__ import annotations

from ..analysis import Analysis
from ._finding import Finding, Thresholds, finding, ms, pct
from ._registry import Cause
from ._rule import GPU_EVENTS, Rule

TF32_CAPABILITY = (8, 0)  # Ampere: the first GPUs whose tensor cores run fp32 matmuls as TF32


def check(a: Analysis, t: Thresholds) -> list[Finding]:
    k = a.kernels
    cc = a.device.compute_capability
    if k.fp32_matmul_ns <= 0 or (cc is not None and cc < TF32_CAPABILITY):
        return []
    fp32 = ms(a, k.fp32_matmul_ns)
    saved = fp32 * (1 - 1 / t.fp32_speedup)
    ops = ", ".join(k.fp32_matmul_ops) or "matmul/convolution"
    evidence = [
        f"fp32 GEMM/convolution kernels on CUDA cores (ffma/sgemm) ran {fp32:.2f} ms per step "
        f"({pct(fp32 / a.step_ms)} of the step), from {ops}",
        f"tensor-core kernels ran {ms(a, k.tensor_core_ns):.2f} ms per step",
    ]
    code = (
        "torch.backends.cuda.matmul.allow_tf32 = True   # or torch.set_float32_matmul_precision('high')\n"
        "torch.backends.cudnn.allow_tf32 = True\n"
        "with torch.autocast('cuda', dtype=torch.bfloat16):\n"
        "    loss = loss_fn(model(x), y)"
    )
    return [
        finding(
            Cause.FP32_MATH,
            a,
            saved,
            evidence,
            code,
            location=k.fp32_location,
            basis_ms=fp32,
            details={"fp32_matmul_ms": fp32, "ops": k.fp32_matmul_ops},
        )
    ]


RULE = Rule.of(
    Cause.FP32_MATH, "fp32 matrix math on CUDA cores on a GPU with tensor cores", (GPU_EVENTS,), check
)
