"""The watchers: what the script does as written (whether it compiles, its model, its loaders, the settings of
a framework's Trainer, what it logs per step), recorded in the child's Recorder; the loader and framework
watchers also apply the variant's keyword overrides (rec.overrides) where the script builds those objects."""

from __future__ import annotations

import inspect
from typing import Any, Callable

from ._hooks import after_import, on_first_model_call
from ._recorder import Recorder


def _watch_compile(rec: Recorder) -> None:
    """Record whether the script compiles (torch.compile, Module.compile, a Trainer's torch_compile)."""
    import torch

    original = torch.compile

    def compile(*args: Any, **kwargs: Any) -> Any:
        if rec._ours:
            rec.tune_compiles += 1
        else:
            rec.script_compiled = True
        return original(*args, **kwargs)

    torch.compile = compile


def _watch_model(rec: Recorder) -> None:
    """Keep the model (see _hooks.on_first_model_call) and whether the script itself runs it under autocast."""
    import torch

    def keep(module: Any, args: Any) -> None:
        rec.model = module
        _watch_padding(module, rec)
        try:
            rec.autocast_at_model = torch.is_autocast_enabled("cuda") or torch.is_autocast_enabled("cpu")
        except TypeError:  # torch before 2.4: no device argument
            rec.autocast_at_model = torch.is_autocast_enabled() or torch.is_autocast_cpu_enabled()

    on_first_model_call(keep)


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
    module: Any, cls_name: str, key: str, fact: str, how: str, settings: dict[str, Any], rec: Recorder
) -> None:
    cls = getattr(module, cls_name, None)
    if cls is None:
        return
    overrides = dict(settings.get(key) or {})

    def record(obj: Any, kw: dict[str, Any]) -> None:
        rec.framework[fact] = {k: _plain(kw[k] if k in kw else getattr(obj, k, None)) for k in _WATCHED[fact]}

    if how == "post_init":  # a dataclass: subclasses inherit __post_init__, not __init__
        post = cls.__post_init__

        def __post_init__(self: Any, *a: Any, **kw: Any) -> None:
            for k, v in overrides.items():
                setattr(self, k, v)
            post(self, *a, **kw)
            record(self, {})

        cls.__post_init__ = __post_init__
    else:
        init = cls.__init__

        def __init__(self: Any, *a: Any, **kw: Any) -> None:
            kw.update(overrides)
            init(self, *a, **kw)
            record(self, kw)

        cls.__init__ = __init__
    if key == "pl_args" and hasattr(cls, "fit"):  # the whole module: the first one called may be a submodule
        fit = cls.fit

        def fit_and_keep(self: Any, model: Any, *a: Any, **kw: Any) -> Any:
            rec.fit_model = getattr(model, "_orig_mod", model)
            return fit(self, model, *a, **kw)

        cls.fit = fit_and_keep


def _framework_patcher(how: tuple[str, str, str, str], rec: Recorder) -> Callable[[Any], None]:
    return lambda module: _patch_framework(module, *how, rec.overrides, rec)


LIGHTNING_MODULES = ("lightning.pytorch.core.module", "pytorch_lightning.core.module")


def watch_script(rec: Recorder) -> None:
    """Every watcher, before the script runs (and before the variant's changes are injected)."""
    for name, how in _FRAMEWORKS.items():  # the Trainer applies the overrides when the script builds it
        after_import((name,), _framework_patcher(how, rec))
    after_import(LIGHTNING_MODULES, lambda module: watch_lightning_log(module, rec))
    _watch_compile(rec)
    _watch_model(rec)  # first: its check of autocast runs before a bf16 candidate enters it
    _wrap_loader(rec)


def watch_lightning_log(module: Any, rec: Recorder) -> None:
    """Record the tensors the script logs with self.log(..., prog_bar=True) per step (the progress bar reads
    each on the host every batch: a GPU sync); with the pl_log_epoch change, log them per epoch instead."""
    import torch

    cls = getattr(module, "LightningModule", None)
    if cls is None or getattr(cls.log, "_idlehound", False):
        return
    log, validator = cls.log, getattr(module, "_FxValidator", None)
    sig = inspect.signature(log)

    def watched_log(self: Any, *a: Any, **kw: Any) -> Any:
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


def _per_step(module: Any, on_step: Any, validator: Any) -> bool:
    """Whether a self.log call logs per step: on_step as given, else Lightning's default for the hook it is in."""
    if on_step is not None or validator is None:
        return bool(on_step)
    fx = getattr(module, "_current_fx_name", None)
    try:
        return bool(fx) and bool(validator.check_logging_and_get_default_levels(fx, None, None)[0])
    except Exception:  # a hook Lightning does not allow logging in: it raises its own error
        return False


def _wrap_loader(rec: Recorder) -> None:
    """Record each DataLoader the script builds, with the variant's loader overrides (rec.overrides["loader"])."""
    from torch.utils.data import DataLoader

    original = DataLoader.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
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


def _watch_padding(module: Any, rec: Recorder, calls: int = 32) -> None:
    """Count the padded tokens of the attention masks the model is called with (transformers models take them as
    keywords), over its next calls: group_by_length can only save the work spent on padding."""
    import torch

    state: dict[str, Any] = {"left": calls}

    def pre(mod: Any, args: Any, kwargs: dict[str, Any]) -> None:
        mask = kwargs.get("attention_mask")
        if isinstance(mask, torch.Tensor) and mask.numel():
            rec.padding[0] += int((mask == 0).sum())
            rec.padding[1] += mask.numel()
        state["left"] -= 1
        if state["left"] <= 0:
            state["handle"].remove()

    state["handle"] = module.register_forward_pre_hook(pre, with_kwargs=True)
