"""`idlehound doctor`: is this machine ready to profile GPU training? Each failure says how to fix it."""

from __future__ import annotations

import importlib.util
from typing import Callable, Union

from rich.console import Console

Check = tuple[str, bool, str]  # (what, ok, detail or remedy)


def _torch() -> list[Check]:
    try:
        import torch
    except ImportError:
        return [
            (
                "PyTorch",
                False,
                "not installed: pip install torch torchvision (README, Install: the CPU-only wheels on a machine without a GPU)",
            )
        ]
    out = [("PyTorch", True, torch.__version__)]
    cuda = torch.cuda.is_available()
    out.append(
        (
            "CUDA available",
            cuda,
            f"CUDA {torch.version.cuda}"
            if cuda
            else "no GPU visible: check the driver (nvidia-smi) and that torch is a CUDA build",
        )
    )
    if cuda:
        p = torch.cuda.get_device_properties(0)
        out.append(
            (
                "GPU",
                True,
                f"{p.name}, {p.total_memory / 2**30:.0f} GiB, {torch.cuda.device_count()} device(s)",
            )
        )
        out.append(("cuDNN", torch.backends.cudnn.is_available(), str(torch.backends.cudnn.version())))
        out.append(_cupti())
    return out


def _cupti() -> Check:
    """Record one kernel; CUPTI that cannot start records none."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    try:
        x = torch.randn(256, 256, device="cuda")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            (x @ x).sum()
            torch.cuda.synchronize()
        kernels = [e for e in p.events() if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA]
    except Exception as e:
        return ("CUPTI records kernels", False, f"profiling failed: {e}")
    if kernels:
        return ("CUPTI records kernels", True, f"{len(kernels)} GPU event(s) recorded")
    return (
        "CUPTI records kernels",
        False,
        "no GPU events: CUPTI lacks permission. In a container run with --cap-add SYS_ADMIN, or set the "
        "driver option NVreg_RestrictProfilingToAdminUsers=0; check LD_LIBRARY_PATH for a stray libcupti",
    )


def _nvml() -> Check:
    try:
        import pynvml

        pynvml.nvmlInit()
        n = pynvml.nvmlDeviceGetCount()
        drv = pynvml.nvmlSystemGetDriverVersion()
        return ("NVML (utilisation sampler)", True, f"driver {drv}, {n} device(s)")
    except ImportError:
        return (
            "NVML (utilisation sampler)",
            False,
            "pip install nvidia-ml-py (idlehound[nvml]); without it idlehound samples CPU use instead",
        )
    except Exception as e:
        return ("NVML (utilisation sampler)", False, f"NVML did not answer ({e}); no NVIDIA driver here?")


def _tensorboard() -> Check:
    ok = importlib.util.find_spec("tensorboard") is not None
    return (
        "TensorBoard",
        ok,
        "installed: tensorboard --logdir log"
        if ok
        else "optional: pip install tensorboard to browse runs; traces also open in ui.perfetto.dev",
    )


CHECKS: list[Callable[[], Union[Check, list[Check]]]] = [_torch, _nvml, _tensorboard]


def run_checks(console: Console | None = None) -> bool:
    c = console or Console()
    results: list[Check] = []
    for fn in CHECKS:
        r = fn()
        results.extend(r if isinstance(r, list) else [r])
    for what, ok, detail in results:
        c.print(f"[{'green' if ok else 'red'}]{'✓' if ok else '✗'}[/] {what}: {detail}")
    required = {"PyTorch"}
    return (
        all(ok for what, ok, _ in results if what in required or "CUDA" in what or "CUPTI" in what)
        if any(w == "CUDA available" and ok for w, ok, _ in results)
        else all(ok for what, ok, _ in results if what in required)
    )
