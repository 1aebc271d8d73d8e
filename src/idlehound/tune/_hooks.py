"""Hooks the child sets before the script runs: an action after a module is imported, and an action at the
model's first training call. Used by the watchers (_watch) and by the changes (_changes) alike."""

from __future__ import annotations

import sys
from typing import Any, Callable


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

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in self.actions:
            return None
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        run, actions = spec.loader.exec_module, self.actions[name]

        def exec_module(module: Any) -> None:
            run(module)
            for action in actions:
                action(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def model_in_this_process(module: Any) -> bool:
    """A module with parameters, called in the training process (not in a DataLoader worker)."""
    from torch.utils.data import get_worker_info

    return get_worker_info() is None and next(module.parameters(), None) is not None


def on_first_model_call(action: Callable[[Any, Any], None]) -> None:
    """Call action(module, args) once, at the model's first training call, before that call runs.

    The model is the first module with parameters called in the training process with grad enabled and in
    training mode (its pre-hook fires before those of its children).
    """
    import torch
    from torch.nn.modules.module import register_module_forward_pre_hook

    state: dict[str, Any] = {}

    def pre(module: Any, args: Any) -> None:
        if not (module.training and torch.is_grad_enabled() and model_in_this_process(module)):
            return
        state["handle"].remove()  # first: the action may call the model again
        action(module, args)

    state["handle"] = register_module_forward_pre_hook(pre)
