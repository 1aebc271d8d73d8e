"""The precision family: cuDNN's algorithm search, TF32 matmuls and bf16 autocast (math that may differ in
rounding: their losses are checked on the smoothed curve)."""

from __future__ import annotations

from typing import Any

from .._hooks import model_in_this_process
from .._recorder import Recorder
from .._source import SourceEdits
from ._base import Change, change


@change("cudnn_benchmark", order=50)
class CudnnBenchmark(Change):
    def inject(self, value: Any, rec: Recorder) -> None:
        import torch

        torch.backends.cudnn.benchmark = True

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        if facts.get("convolutions") == 0:
            return "the model has no convolutions"
        return "the script sets cudnn.benchmark already" if facts.get("cudnn_benchmark") else ""

    def edit(self, value: Any, src: SourceEdits) -> None:
        src.header.append("torch.backends.cudnn.benchmark = True")


@change("tf32", order=60)
class TF32(Change):
    def inject(self, value: Any, rec: Recorder) -> None:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.set_float32_matmul_precision("high")

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        return "the script allows TF32 matmuls already" if facts.get("tf32") else ""

    def edit(self, value: Any, src: SourceEdits) -> None:
        src.header += [
            "torch.backends.cuda.matmul.allow_tf32 = True",
            "torch.backends.cudnn.allow_tf32 = True",
        ]


@change("autocast", order=70)
class Autocast(Change):
    """Autocast around the outermost module call (registered before channels_last and the graphs: a graph
    recorded under autocast replays its casts)."""

    def inject(self, value: Any, rec: Recorder) -> None:
        import torch

        autocast_outer_forward(getattr(torch, value), cache=not rec.settings.get("cuda_graphs"))

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        return "the script runs its model under autocast already" if facts.get("autocast") else ""

    def edit(self, value: Any, src: SourceEdits) -> None:
        src.snippets.append(
            f"with torch.autocast('cuda', dtype=torch.{value}):\n"
            "    output = model(inputs)   # wrap the model's forward (and the loss) in the loop"
        )


def autocast_outer_forward(dtype: Any, cache: bool = True) -> None:
    """Enter autocast when the outermost module call starts and leave it when that call returns."""
    import torch
    from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

    state: dict[str, Any] = {"depth": 0, "ctx": None}
    device = "cuda" if torch.cuda.is_available() else "cpu"

    def pre(module: Any, args: Any) -> None:
        # Only the model, in the training process: transforms can be modules too, and entering a CUDA
        # autocast inside a forked DataLoader worker would initialise CUDA there.
        if state["depth"] == 0 and not model_in_this_process(module):
            return
        if state["depth"] == 0:
            state["ctx"] = torch.autocast(device, dtype=dtype, cache_enabled=cache)
            state["ctx"].__enter__()
        state["depth"] += 1

    def post(module: Any, args: Any, out: Any) -> Any:
        if state["depth"] == 0:  # a call the pre-hook skipped
            return out
        state["depth"] -= 1
        if state["depth"] == 0 and state["ctx"] is not None:
            state["ctx"].__exit__(None, None, None)
            state["ctx"] = None
        return out

    register_module_forward_pre_hook(pre)
    register_module_forward_hook(post)
