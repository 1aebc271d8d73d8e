"""Which events play which role: GPU work, launches, syncs, data loading, communication.

Names are matched by pattern families (prefixes, substrings), not by fixed lists of exact names,
so new kernels and runtime calls of the same kind are still recognised.
"""

from __future__ import annotations

import re
from typing import Any, Optional

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset")
RUNTIME_CATS = ("cuda_runtime", "cuda_driver", "Runtime")
CPU_OP_CATS = ("cpu_op", "Operator")

# ROCm's HIP runtime adds hipExtModuleLaunchKernel / hipModuleLaunchKernel (hipBLASLt, Triton) to the CUDA names.
_LAUNCH_RE = re.compile(
    r"^(__)?(cuda|cu|hip)(Graph)?Launch|^cudaLaunch|^cuGraphLaunch|^hip(Ext)?(Module)?Launch"
)
_ENQUEUE_RE = re.compile(r"^(cuda|cu|hip)Mem(cpy|set).*Async|^cuMemcpy.*Async|^cuMemset.*Async")
# Host calls that block until the GPU catches up (cudaFree and the blocking cudaMemcpy do so implicitly;
# PyTorch on ROCm copies with the blocking hipMemcpyWithStream).
_SYNC_RE = re.compile(
    r"^(cuda|cu|hip)(Stream|Device|Ctx|Event)Synchronize$|^(cuda|hip)Memcpy(2D|3D|ToSymbol|FromSymbol|WithStream)?$"
    r"|^cuMemcpy(DtoH|HtoD|DtoD)?(_v2)?$|^(cuda|hip)Free(Host)?$|^cuMemFree(_v2)?$"
)
_COMM_KERNEL_RE = re.compile(r"nccl|rccl|hccl", re.IGNORECASE)
_COMM_OP_RE = re.compile(r"^(nccl|gloo|c10d)[:_]|^record_param_comms$|^c10d::")
_STEP_RE = re.compile(r"^ProfilerStep#(\d{1,18})$")  # more digits: not a real step (int64)
# A scalar read or a data-dependent shape makes the host wait for the GPU.
_SCALAR_OPS = ("aten::_local_scalar_dense", "aten::item", "aten::is_nonzero")
_SHAPE_OPS_RE = re.compile(r"^aten::(nonzero|masked_select|unique|_unique|repeat_interleave|bincount|histc)")


def is_launch(name: str) -> bool:
    return bool(_LAUNCH_RE.match(name))


def is_enqueue(name: str) -> bool:
    return is_launch(name) or bool(_ENQUEUE_RE.match(name))


def is_sync_call(name: str) -> bool:
    return bool(_SYNC_RE.match(name))


def is_allocator_call(name: str) -> bool:
    """Device memory allocation calls: caching-allocator misses and empty_cache() reach these."""
    return (
        name.startswith(("cudaMalloc", "cudaFree", "cuMemAlloc", "cuMemFree", "hipMalloc", "hipFree"))
        and "Host" not in name
    )


def is_dataloader(name: str) -> bool:
    return (name.startswith("enumerate(DataLoader)#") and name.endswith("__next__")) or name.startswith(
        "enumerate(DataPipe)#"
    )


# Collectives as the calling thread records them (gloo and NCCL alike): a per-step one is a wait for every rank.
COLLECTIVES = (
    "c10d::allreduce_",
    "c10d::barrier",
    "c10d::allgather",
    "c10d::_allgather_base",
    "c10d::broadcast_",
)


def is_host_wait(name: str) -> bool:
    """A host read of a device value (scalar read, data-dependent shape), a blocking runtime call, or a
    collective: where the host waits for the GPU, or every rank for the others."""
    return (
        sync_kind("", name, "") in ("scalar_read", "data_dependent_shape")
        or is_sync_call(name)
        or name.startswith(COLLECTIVES)
    )


def is_idle_point(name: str) -> bool:
    """Where the host waits while the GPU may idle: a host wait (is_host_wait), or a DataLoader wait. Capture
    keeps the library stacks above these (sidecar version 3); the framework rule reads them."""
    return is_host_wait(name) or is_dataloader(name)


def is_comm_kernel(name: str) -> bool:
    return bool(_COMM_KERNEL_RE.search(name))


def is_comm_op(name: str) -> bool:
    return bool(_COMM_OP_RE.match(name))


def step_number(name: str) -> Optional[int]:
    m = _STEP_RE.match(name)
    return int(m.group(1)) if m else None


def sync_kind(call: str, op: str, copy_name: str) -> str:
    """Classify one blocking host call by the op that issued it and the copy it waited for."""
    if call.startswith(("cudaFree", "cuMemFree", "hipFree")):
        return "allocator"
    if op in _SCALAR_OPS:
        return "scalar_read"
    if _SHAPE_OPS_RE.match(op):
        return "data_dependent_shape"
    if "HtoD" in copy_name and "Pageable" in copy_name:
        return "pageable_h2d"
    if "DtoH" in copy_name:
        return "d2h_copy"
    if not op and "Device" in call or call.startswith(("cuCtxSynchronize",)):
        return "device_synchronize"
    if not op:
        return "stream_synchronize"
    return "other"


def kernel_family(name: str) -> str:
    """Group a kernel name: drop 'void ', template arguments and parameter lists."""
    n = name[5:] if name.startswith("void ") else name
    out, depth = [], 0
    for ch in n:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    return "".join(out).strip() or name


_GEMM_RE = re.compile(r"gemm|conv|fprop|dgrad|wgrad|nvjet|cutlass|xmma|cublas|cudnn::.*(conv|gemm)", re.I)
_NO_TC_RE = re.compile(r"ffma|sgemm|f32f32_f32f32|_simt_|gemv", re.I)
_TC_RE = re.compile(
    r"tf32|bf16|f16|fp16|hmma|hgmma|gmma|tensorop|1688|16816|884|nvjet|i8816|imma|e4m3|e5m2", re.I
)


# Input types (a cpu_op's "Input type" arg) that only run on tensor cores in GEMM/convolution kernels.
_TC_DTYPES = (
    "c10::Half",
    "c10::BFloat16",
    "c10::Float8_e4m3fn",
    "c10::Float8_e5m2",
    "c10::Float8_e4m3fnuz",
    "c10::Float8_e5m2fnuz",
)


def is_matmul_kernel(kernel: str) -> bool:
    return bool(_GEMM_RE.search(kernel))


def dtype_precision(input_types: Any) -> str:
    """'tensor_core' when a matmul/convolution op's inputs are half, bf16 or fp8; '' when the types cannot
    tell (fp32 runs on tensor cores only with TF32 on, which the trace does not record)."""
    return "tensor_core" if any(t in _TC_DTYPES for t in input_types or ()) else ""


def matmul_precision(kernel: str) -> str:
    """'fp32' (CUDA cores), 'tensor_core', or '' for kernels that are not GEMM/convolution (or whose name does
    not tell: see dtype_precision)."""
    if not _GEMM_RE.search(kernel):
        return ""
    if _NO_TC_RE.search(kernel):
        return "fp32"
    if _TC_RE.search(kernel):
        return "tensor_core"
    return ""


MATMUL_OP_RE = re.compile(
    r"^aten::(mm|addmm|bmm|baddbmm|matmul|linear|_?convolution|conv\d?d|cudnn_convolution"
    r"|convolution_backward|addbmm|_scaled_mm)"
)

CONV_OP_RE = re.compile(
    r"^aten::(_?convolution|conv\d?d|cudnn_convolution|convolution_backward|miopen_convolution)"
)
