"""tqdm: a progress bar that formats a tensor every step (it never runs the loop itself)."""

from __future__ import annotations

from ._table import Framework, FrameworkEntry

NAME = "tqdm"

TENSOR_POSTFIX = FrameworkEntry(
    name="tqdm_tensor_postfix",
    framework=NAME,
    title="A tqdm progress bar formats a tensor (set_postfix / set_description) every step",
    frames=(
        (
            "tqdm/std.py",
            (
                "set_postfix",
                "set_postfix_str",
                "set_description",
                "set_description_str",
                "format_meter",
                "__str__",
                "display",
                "refresh",
            ),
        ),
    ),
    order=40,
    fix="Give the progress bar Python numbers, and only every N steps: a tensor in set_postfix is "
    "formatted on the host, which waits for the GPU.",
    code="if step % 50 == 0:\n    pbar.set_postfix(loss=loss.item())   # one read per 50 steps",
)

FRAMEWORK = Framework(name=NAME, words="tqdm", entries=(TENSOR_POSTFIX,))
