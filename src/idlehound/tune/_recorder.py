"""What the child records of one run of the script: its optimizer steps and their times, its losses, its
loaders and what it does as written (the facts the no-op checks read)."""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: this runs in the script's process
    from collections.abc import Iterator


class Done(SystemExit):
    """Raised at the last timed step: the script has run what the tune needs."""


class Recorder:
    def __init__(self, skip: int, steps: int) -> None:
        import torch

        self.torch = torch
        self.skip, self.steps = skip, steps
        self.cuda = torch.cuda.is_available()
        self.n = 0
        self.marks: list[tuple[int, Any]] = []  # (optimizer step, its time) from step `skip` on
        self.wall: list[float] = []  # monotonic time of each timed mark, to pick the sampler's window
        self.model: Any = None
        self.facts: dict[str, Any] = {}  # what the script does as written, for the no-op checks
        self.autocast_at_model = False
        self.framework: dict[str, Any] = {}  # what the script set on a framework's Trainer (_FRAMEWORKS)
        self.losses: list[Any] = []
        self.first_opt: int | None = None
        self.loaders: list[dict[str, Any]] = []
        self.graphed_inputs: list[dict[str, Any]] | None = None
        self.fit_model: Any = None  # the module a Lightning Trainer fits
        self.settings: dict[str, Any] = {}  # the variant's settings
        self.overrides: dict[
            str, Any
        ] = {}  # keyword overrides the watchers apply: "loader", "hf_args", "pl_args"
        self.script_compiled = False  # the script called torch.compile (not a change tune injected)
        self.tune_compiles = 0  # torch.compile calls tune injected
        self._ours = 0
        self.clock: dict[str, float] = {}  # wall time (time.time) at the child's milestones, for the phases
        self.padding = [0, 0]  # padded and all tokens of the attention masks the model was called with

    @contextlib.contextmanager
    def ours(self) -> Iterator[None]:
        """While tune itself compiles: the torch.compile calls inside are not the script's."""
        self._ours += 1
        try:
            yield
        finally:
            self._ours -= 1

    @property
    def in_flight(self) -> int:
        return max((ld["num_workers"] * (ld["prefetch_factor"] or 0) for ld in self.loaders), default=0)

    @property
    def warmup(self) -> int:
        """--skip, and at least twice the batches the loaders can hold in flight: batches the workers queued
        while the first steps were slow would otherwise make the timed steps look faster than the loader is."""
        return max(self.skip, 2 * self.in_flight)

    def fitted_warmup(self) -> int:
        """The warm-up used: the raised one when the script made enough steps, else as much of it as fits
        before the last `steps` steps (never below --skip)."""
        return self.warmup if self.n >= self.warmup + self.steps else max(self.skip, self.n - self.steps)

    def warmup_note(self) -> str:
        w = self.fitted_warmup()
        if w == self.skip:
            return ""
        why = f"twice the {self.in_flight} batches its loader holds in flight"
        if w < self.warmup:
            return (
                f"warm-up {w} steps, not {self.warmup} ({why}): the script made only {self.n} optimizer steps"
            )
        return f"warm-up raised from --skip {self.skip} to {w} steps: {why}"

    def on_backward(self, tensor: Any) -> None:
        if tensor.numel() == 1 and len(self.losses) < self.warmup + self.steps + 1:
            self.losses.append(tensor.detach().float().clone())  # no sync: read at the end

    def on_step(self, opt: Any) -> None:
        if self.first_opt is None:
            self.first_opt = id(opt)
        if id(opt) != self.first_opt:
            return
        self.n += 1
        if self.n == 1:
            self.clock["first_step"] = time.time()
            self.facts = {
                **script_facts(self.fit_model or self.model, opt, self.autocast_at_model),
                **self.framework,
                "compiled": self.script_compiled,
            }
        if self.n >= self.skip:
            self.wall.append(time.monotonic())
            if self.cuda:
                ev = self.torch.cuda.Event(enable_timing=True)
                ev.record()
                self.marks.append((self.n, ev))
            else:
                self.marks.append((self.n, time.perf_counter()))
        if self.n == self.warmup:
            self.clock["warm"] = time.time()
        if self.n >= self.warmup + self.steps:
            self.clock["end"] = time.time()
            raise Done(0)

    def timed(self) -> list[Any]:
        w = self.fitted_warmup()
        return [m for n, m in self.marks if w <= n <= w + self.steps]

    def result(self) -> dict[str, Any]:
        marks = self.timed()
        if self.cuda:
            self.torch.cuda.synchronize()
            total_ms = marks[0].elapsed_time(marks[-1]) if len(marks) > 1 else None
        else:
            total_ms = (marks[-1] - marks[0]) * 1e3 if len(marks) > 1 else None
        steps = len(marks) - 1
        if self.facts and self.padding[1]:
            self.facts["padded_share"] = round(self.padding[0] / self.padding[1], 4)
        return {
            "steps_timed": steps,
            "warmup_steps": self.fitted_warmup(),
            "warmup_note": self.warmup_note(),
            "facts": self.facts,
            "ms_per_step": total_ms / steps if total_ms and steps > 0 else None,
            "losses": [float(x) for x in self.losses],
            "optimizer_steps": self.n,
            "loaders": self.loaders,
            "graphed_inputs": self.graphed_inputs,
            "tune_compiles": self.tune_compiles,
        }


def script_facts(model: Any, opt: Any, autocast: bool) -> dict[str, Any]:
    """What the script does as written at its first optimizer step, for the candidates that would change nothing."""
    import torch

    groups = getattr(opt, "param_groups", [])
    facts: dict[str, Any] = {
        "optimizer": type(opt).__name__,
        "optimizer_fused_or_foreach": any(g.get("fused") or g.get("foreach") for g in groups),
        "tf32": bool(torch.backends.cuda.matmul.allow_tf32)
        or torch.get_float32_matmul_precision() != "highest",
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "threads": torch.get_num_threads(),
        "autocast": autocast,
    }
    if model is not None:
        weights4 = [p for p in model.parameters() if p.dim() == 4]
        facts.update(
            weights_4d=len(weights4),
            channels_last=bool(weights4)
            and all(
                p.is_contiguous(memory_format=torch.channels_last) and not p.is_contiguous() for p in weights4
            ),
            convolutions=sum(isinstance(m, torch.nn.modules.conv._ConvNd) for m in model.modules()),
        )
    return facts
