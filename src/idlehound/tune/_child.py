"""Runs the user's script once for `idlehound tune`: applies one variant's settings at start-up, seeds
everything, times a fixed number of steps after a warm-up, records each step's loss, then stops the script.

    python -m idlehound.tune._child RESULT.json SETTINGS_JSON SKIP STEPS script.py [args...]
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import runpy
import sys
import time
import weakref
from pathlib import Path
from typing import Any, Callable

from ..settings import TUNE_LAUNCHED, TUNE_SCRIPT_DIR


class _Done(SystemExit):
    pass


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
        self.loaders: list[dict] = []
        self.graphed_inputs: list[dict] | None = None
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
    def ours(self):
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

    def on_backward(self, tensor) -> None:
        if tensor.numel() == 1 and len(self.losses) < self.warmup + self.steps + 1:
            self.losses.append(tensor.detach().float().clone())  # no sync: read at the end

    def on_step(self, opt) -> None:
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
            raise _Done(0)

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


def script_facts(model, opt, autocast: bool) -> dict[str, Any]:
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


def _watch_compile(rec: Recorder) -> None:
    """Record whether the script compiles (torch.compile, Module.compile, a Trainer's torch_compile)."""
    import torch

    original = torch.compile

    def compile(*args, **kwargs):
        if rec._ours:
            rec.tune_compiles += 1
        else:
            rec.script_compiled = True
        return original(*args, **kwargs)

    torch.compile = compile


def after_import(names: tuple[str, ...], action: Callable[[Any], None]) -> None:
    """Call action(module) once one of the modules named has run (nothing is imported that the script does not)."""
    finder = next((f for f in sys.meta_path if isinstance(f, _AfterImport)), None)
    if finder is None:
        finder = _AfterImport()
        sys.meta_path.insert(0, finder)
    for name in names:
        finder.actions.setdefault(name, []).append(action)


class _AfterImport:
    """A meta path finder: runs the actions registered for a module right after the module itself has run."""

    def __init__(self) -> None:
        self.actions: dict[str, list[Callable[[Any], None]]] = {}

    def find_spec(self, name, path, target=None):
        if name not in self.actions:
            return None
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        run, actions = spec.loader.exec_module, self.actions[name]

        def exec_module(module):
            run(module)
            for action in actions:
                action(module)

        spec.loader.exec_module = exec_module
        return spec


def _watch_model(rec: Recorder) -> None:
    """Keep the model (see _on_first_model_call) and whether the script itself runs it under autocast."""
    import torch

    def keep(module, args):
        rec.model = module
        _watch_padding(module, rec)
        try:
            rec.autocast_at_model = torch.is_autocast_enabled("cuda") or torch.is_autocast_enabled("cpu")
        except TypeError:  # torch before 2.4: no device argument
            rec.autocast_at_model = torch.is_autocast_enabled() or torch.is_autocast_cpu_enabled()

    _on_first_model_call(keep)


# module -> (class, settings key, facts key, how its settings are applied)
_FRAMEWORKS: dict[str, tuple[str, str, str, str]] = {
    "transformers.training_args": ("TrainingArguments", "hf_args", "transformers_args", "post_init"),
    "lightning.pytorch.trainer.trainer": ("Trainer", "pl_args", "lightning_args", "init"),
    "pytorch_lightning.trainer.trainer": ("Trainer", "pl_args", "lightning_args", "init"),
}
_WATCHED = {
    "transformers_args": (
        "dataloader_num_workers",
        "dataloader_pin_memory",
        "dataloader_persistent_workers",
        "logging_nan_inf_filter",
        "tf32",
        "bf16",
        "fp16",
        "torch_compile",
        "group_by_length",
    ),
    "lightning_args": ("precision", "benchmark"),
}


def _plain(v: Any) -> Any:
    return v if v is None or isinstance(v, (bool, int, float, str)) else str(v)


def _patch_framework(
    module, cls_name: str, key: str, fact: str, how: str, settings: dict, rec: Recorder
) -> None:
    cls = getattr(module, cls_name, None)
    if cls is None:
        return
    overrides = dict(settings.get(key) or {})

    def record(obj, kw: dict) -> None:
        rec.framework[fact] = {k: _plain(kw[k] if k in kw else getattr(obj, k, None)) for k in _WATCHED[fact]}

    if how == "post_init":  # a dataclass: subclasses inherit __post_init__, not __init__
        post = cls.__post_init__

        def __post_init__(self, *a, **kw):
            for k, v in overrides.items():
                setattr(self, k, v)
            post(self, *a, **kw)
            record(self, {})

        cls.__post_init__ = __post_init__
    else:
        init = cls.__init__

        def __init__(self, *a, **kw):
            kw.update(overrides)
            init(self, *a, **kw)
            record(self, kw)

        cls.__init__ = __init__
    if key == "pl_args" and hasattr(cls, "fit"):  # the whole module: the first one called may be a submodule
        fit = cls.fit

        def fit_and_keep(self, model, *a, **kw):
            rec.fit_model = getattr(model, "_orig_mod", model)
            return fit(self, model, *a, **kw)

        cls.fit = fit_and_keep


def _framework_patcher(how: tuple[str, str, str, str], rec: Recorder) -> Callable[[Any], None]:
    return lambda module: _patch_framework(module, *how, rec.overrides, rec)


LIGHTNING_MODULES = ("lightning.pytorch.core.module", "pytorch_lightning.core.module")


def _watch_lightning_log(module, rec: Recorder) -> None:
    """Record the tensors the script logs with self.log(..., prog_bar=True) per step (the progress bar reads
    each on the host every batch: a GPU sync); with the pl_log_epoch change, log them per epoch instead."""
    import inspect

    import torch

    cls = getattr(module, "LightningModule", None)
    if cls is None or getattr(cls.log, "_idlehound", False):
        return
    log, validator = cls.log, getattr(module, "_FxValidator", None)
    sig = inspect.signature(log)

    def watched_log(self, *a, **kw):
        try:
            bound = sig.bind(self, *a, **kw)
        except TypeError:  # Lightning says what is wrong
            return log(self, *a, **kw)
        args = bound.arguments
        value, on_step = args.get("value"), args.get("on_step")
        if args.get("prog_bar") and isinstance(value, torch.Tensor) and _per_step(self, on_step, validator):
            names = rec.framework.setdefault("lightning_step_prog_bar", [])
            if args["name"] not in names:
                names.append(str(args["name"]))
            if rec.overrides.get("pl_log_epoch"):
                args["on_step"], args["on_epoch"] = False, True
        return log(*bound.args, **bound.kwargs)

    watched_log._idlehound = True  # type: ignore[attr-defined]
    cls.log = watched_log


def _per_step(module, on_step: Any, validator: Any) -> bool:
    """Whether a self.log call logs per step: on_step as given, else Lightning's default for the hook it is in."""
    if on_step is not None or validator is None:
        return bool(on_step)
    fx = getattr(module, "_current_fx_name", None)
    try:
        return bool(fx) and bool(validator.check_logging_and_get_default_levels(fx, None, None)[0])
    except Exception:  # a hook Lightning does not allow logging in: it raises its own error
        return False


def apply(settings: dict[str, Any], rec: Recorder) -> None:
    """Inject the variant's settings without touching the script: the watchers that record what the script does,
    then each change of the registry (_changes) the settings ask for, in the registry's order."""
    from ._changes import CHANGES

    seed_everything(0)
    rec.settings = settings
    for name, how in _FRAMEWORKS.items():  # the Trainer applies the overrides when the script builds it
        after_import((name,), _framework_patcher(how, rec))
    after_import(LIGHTNING_MODULES, lambda module: _watch_lightning_log(module, rec))
    _watch_compile(rec)
    _watch_model(rec)  # first: its check of autocast runs before a bf16 candidate enters it
    _wrap_loader(rec)
    for key, change in CHANGES.items():
        if settings.get(key):
            change.inject(settings[key], rec)


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:
        pass


def _wrap_loader(rec: Recorder) -> None:
    """Record each DataLoader the script builds, with the variant's loader overrides (rec.overrides["loader"])."""
    from torch.utils.data import DataLoader

    original = DataLoader.__init__

    def __init__(self, *args, **kwargs):
        kw = dict(kwargs)
        overrides = rec.overrides.get("loader") or {}
        if overrides:
            kw.update(overrides)
            if kw.get("num_workers", 0) == 0:
                kw.pop("persistent_workers", None)
                kw.pop("prefetch_factor", None)
        original(self, *args, **kw)
        rec.loaders.append(
            {
                "num_workers": self.num_workers,
                "pin_memory": self.pin_memory,
                "batch_size": self.batch_size,
                "prefetch_factor": self.prefetch_factor,
            }
        )

    DataLoader.__init__ = __init__


def _async_batch_copies() -> None:
    """Copy pinned DataLoader batches to the GPU with non_blocking=True when the script did not say.

    Safe for these tensors only: the loader hands out fresh pinned buffers and never writes them again, so the
    host need not wait for the copy. Other tensors keep the script's own choice.
    """
    import torch
    from torch.utils.data import dataloader as dl

    batch: dict[int, Any] = {}  # id -> weakref; not a WeakSet, whose lookups would call Tensor.__eq__
    original_next = dl._BaseDataLoaderIter.__next__

    def __next__(it):
        out = original_next(it)
        _collect_pinned(out, batch)
        return out

    def wrap(method):
        def call(self, *args, **kwargs):
            ref = batch.get(id(self))
            if (
                ref is not None
                and ref() is self
                and "non_blocking" not in kwargs
                and not any(isinstance(a, bool) for a in args)
            ):
                kwargs["non_blocking"] = True
            return method(self, *args, **kwargs)

        return call

    dl._BaseDataLoaderIter.__next__ = __next__
    torch.Tensor.to = wrap(torch.Tensor.to)
    torch.Tensor.cuda = wrap(torch.Tensor.cuda)


def _collect_pinned(obj, into: dict, depth: int = 0) -> None:
    import torch

    if isinstance(obj, torch.Tensor):
        if obj.is_pinned():
            key = id(obj)
            into[key] = weakref.ref(obj, lambda _, key=key: into.pop(key, None))  # type: ignore[misc]
    elif depth < 3 and isinstance(obj, (list, tuple)):
        for x in obj:
            _collect_pinned(x, into, depth + 1)
    elif depth < 3 and isinstance(obj, dict):
        for x in obj.values():
            _collect_pinned(x, into, depth + 1)


def _autocast_outer_forward(dtype, cache: bool = True) -> None:
    """Enter autocast when the outermost module call starts and leave it when that call returns."""
    import torch
    from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

    state = {"depth": 0, "ctx": None}
    device = "cuda" if torch.cuda.is_available() else "cpu"

    def pre(module, args):
        # Only the model, in the training process: transforms can be modules too, and entering a CUDA
        # autocast inside a forked DataLoader worker would initialise CUDA there.
        if state["depth"] == 0 and not _model_in_this_process(module):
            return
        if state["depth"] == 0:
            state["ctx"] = torch.autocast(device, dtype=dtype, cache_enabled=cache)
            state["ctx"].__enter__()
        state["depth"] += 1

    def post(module, args, out):
        if state["depth"] == 0:  # a call the pre-hook skipped
            return out
        state["depth"] -= 1
        if state["depth"] == 0 and state["ctx"] is not None:
            state["ctx"].__exit__(None, None, None)
            state["ctx"] = None
        return out

    register_module_forward_pre_hook(pre)
    register_module_forward_hook(post)


def _model_in_this_process(module) -> bool:
    """A module with parameters, called in the training process (not in a DataLoader worker)."""
    from torch.utils.data import get_worker_info

    return get_worker_info() is None and next(module.parameters(), None) is not None


def _watch_padding(module, rec: Recorder, calls: int = 32) -> None:
    """Count the padded tokens of the attention masks the model is called with (transformers models take them as
    keywords), over its next calls: group_by_length can only save the work spent on padding."""
    import torch

    state: dict[str, Any] = {"left": calls}

    def pre(mod, args, kwargs):
        mask = kwargs.get("attention_mask")
        if isinstance(mask, torch.Tensor) and mask.numel():
            rec.padding[0] += int((mask == 0).sum())
            rec.padding[1] += mask.numel()
        state["left"] -= 1
        if state["left"] <= 0:
            state["handle"].remove()

    state["handle"] = module.register_forward_pre_hook(pre, with_kwargs=True)


def _on_first_model_call(action) -> None:
    """Call action(module, args) once, at the model's first training call, before that call runs.

    The model is the first module with parameters called in the training process with grad enabled and in
    training mode (its pre-hook fires before those of its children).
    """
    import torch
    from torch.nn.modules.module import register_module_forward_pre_hook

    state: dict[str, Any] = {}

    def pre(module, args):
        if not (module.training and torch.is_grad_enabled() and _model_in_this_process(module)):
            return
        state["handle"].remove()  # first: the action may call the model again
        action(module, args)

    state["handle"] = register_module_forward_pre_hook(pre)


on_first_model_call = _on_first_model_call


def _graph_first_model(rec: Recorder, make_graphed=None) -> None:
    """Record the model's forward and backward as CUDA graphs at its first training call (which itself runs
    eagerly); replay them after."""

    def record(module, args):
        rec.graphed_inputs = graph_module(module, args, make_graphed or _make_graphed_thread_local)

    _on_first_model_call(record)


def _make_graphed_thread_local(module, sample):
    """make_graphed_callables, recording in "thread_local" capture mode: the DataLoader's pin-memory thread
    already runs and calls CUDA (pinned allocations, event queries) while the model is recorded, which the
    default "global" mode turns into a failed capture. (A script that records before its loop starts, as the
    diff does, has no such thread yet.)"""
    import inspect

    import torch

    make = torch.cuda.make_graphed_callables
    if "capture_error_mode" in inspect.signature(make).parameters:
        return make(module, sample, capture_error_mode="thread_local")
    original = torch.cuda.graph

    class graph(original):  # older torch: make_graphed_callables opens torch.cuda.graph(...) itself
        def __init__(self, *a, **kw):
            kw.setdefault("capture_error_mode", "thread_local")
            super().__init__(*a, **kw)

    torch.cuda.graph = graph
    try:
        return make(module, sample)
    finally:
        torch.cuda.graph = original


def graph_module(module, args: tuple, make_graphed) -> list[dict[str, Any]]:
    """Replace module.forward by a dispatcher: calls shaped like `args` replay the recorded graphs, any other
    call (another batch size, eval mode, no_grad, keywords) runs the module's own forward."""
    import torch

    if not args or not all(isinstance(a, torch.Tensor) for a in args):
        raise TypeError("cuda_graphs: the model's inputs are not all tensors; nothing was recorded")
    sample = tuple(a.detach().clone().requires_grad_(a.requires_grad) for a in args)
    spec = [(a.shape, a.dtype, a.device, a.requires_grad) for a in sample]
    # The recording's warm-up runs move BatchNorm's running statistics: put them back so the math is the script's.
    saved = [(b, b.detach().clone()) for b in module.buffers()]
    eager = module.forward
    make_graphed(module, sample)
    with torch.no_grad():
        for b, value in saved:
            b.copy_(value)
    graphed = module.forward

    def forward(*a, **kw):
        same = (
            not kw
            and len(a) == len(spec)
            and module.training
            and torch.is_grad_enabled()
            and all(
                isinstance(x, torch.Tensor) and (x.shape, x.dtype, x.device, x.requires_grad) == s
                for x, s in zip(a, spec)
            )
        )
        return graphed(*a) if same else eager(*a, **kw)

    module.forward = forward
    return [{"shape": list(a.shape), "dtype": str(a.dtype).replace("torch.", "")} for a in sample]


def _fused_optimizers() -> None:
    import torch

    from ._candidates import FUSED_OPTIMIZERS

    cuda = torch.cuda.is_available()
    for name in FUSED_OPTIMIZERS:
        cls = getattr(torch.optim, name)
        original = cls.__init__

        def __init__(self, *args, __orig=original, **kwargs):
            if "fused" not in kwargs and "foreach" not in kwargs:
                kwargs["fused" if cuda else "foreach"] = True
            __orig(self, *args, **kwargs)

        cls.__init__ = __init__


def _timed_util(samples: dict[str, Any], wall: list[float]) -> float | None:
    """Mean NVML utilisation over the timed steps only (start-up and warm-up excluded)."""
    from ..sampler import summarize

    if len(wall) < 2:
        return None
    t0 = samples["t0_monotonic"]
    return summarize(samples, (wall[0] - t0, wall[-1] - t0)).get("window_mean_util")


def _describe(e: BaseException) -> str:
    """First and last line of the message: a worker's error arrives wrapped, its cause on the last line."""
    lines = [ln for ln in str(e).splitlines() if ln.strip()]
    text = lines[0] if lines else ""
    if len(lines) > 1 and lines[-1] != lines[0]:
        text += " ... " + lines[-1].strip()
    return f"{type(e).__name__}: {text}"[:400]


def phases(clock: dict[str, float], launched: float | None) -> dict[str, float]:
    """Seconds between the milestones of one run: where a child run's wall time goes (start-up, the script's
    set-up to its first step, warm-up, timed steps), so the tune budget's cost per run can be read off."""
    order = ["launch", "main", "script", "first_step", "warm", "end"]
    t = {**clock, **({"launch": launched} if launched else {})}
    have = [k for k in order if t.get(k)]
    return {f"{a}_to_{b}": round(t[b] - t[a], 3) for a, b in zip(have, have[1:])}


def main() -> None:
    started = time.time()
    out, settings_json, skip, steps, script, *args = sys.argv[1:]
    settings = json.loads(settings_json)
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    rec = Recorder(int(skip), int(steps))
    rec.clock["main"] = started
    apply(settings, rec)
    register_optimizer_step_post_hook(lambda opt, a, k: rec.on_step(opt))
    original_backward = torch.Tensor.backward

    def backward(self, *a, **k):
        rec.on_backward(self)
        return original_backward(self, *a, **k)

    torch.Tensor.backward = backward
    sampler = None
    try:
        from ..sampler import Sampler

        sampler = Sampler(hz=10).start() if rec.cuda else None
    except Exception:
        sampler = None
    status, error = "ok", ""
    sys.argv[:] = [script, *args]
    sys.path.insert(0, str(Path(script).resolve().parent))
    script_dir = TUNE_SCRIPT_DIR.get()
    if script_dir:  # a changed copy runs from the tune folder: the script's own modules still import
        sys.path.insert(0, script_dir)
    rec.clock["script"] = time.time()
    try:
        runpy.run_path(script, run_name="__main__")
        if rec.n < rec.skip + rec.steps:
            status, error = (
                "short",
                (
                    f"the script made {rec.n} optimizer steps, fewer than --skip {rec.skip} + "
                    f"--steps {rec.steps}"
                ),
            )
    except _Done:
        pass
    except SystemExit as e:
        if e.code not in (None, 0):
            status, error = "failed", f"exited with code {e.code}"
    except BaseException as e:  # the variant crashed (or ran out of memory): report, do not hide
        status, error = "failed", _describe(e)
    result: dict[str, Any] = (
        rec.result()
        if status in ("ok", "short")
        else {"losses": [], "loaders": rec.loaders, "facts": rec.facts}
    )
    if sampler is not None:
        result["gpu_util"] = _timed_util(sampler.stop(), rec.wall)
    result.update(status=status, error=error, phases_s=phases(rec.clock, TUNE_LAUNCHED.get()))
    Path(out).write_text(json.dumps(result))
    os._exit(0)  # do not wait for the script's leftover threads or worker processes


if __name__ == "__main__":
    main()
