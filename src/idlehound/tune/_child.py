"""Runs the user's script once for `idlehound tune`: applies one variant's settings at start-up, seeds
everything, times a fixed number of steps after a warm-up, records each step's loss, then stops the script.

    python -m idlehound.tune._child RESULT.json SETTINGS_JSON SKIP STEPS script.py [args...]
"""

from __future__ import annotations

import json
import os
import random
import runpy
import sys
import time
from pathlib import Path
from typing import Any

from ..settings import TUNE_LAUNCHED, TUNE_SCRIPT_DIR
from ._changes import CHANGES
from ._changes.graphs import graph_first_model as _graph_first_model
from ._changes.loader import async_batch_copies as _async_batch_copies
from ._changes.precision import autocast_outer_forward as _autocast_outer_forward
from ._recorder import Done, Recorder
from ._watch import watch_lightning_log as _watch_lightning_log
from ._watch import watch_script


def apply(settings: dict[str, Any], rec: Recorder) -> None:
    """Inject the variant's settings without touching the script: the watchers that record what the script does,
    then each change of the registry (_changes) the settings ask for, in the registry's order."""
    seed_everything(0)
    rec.settings = settings
    watch_script(rec)
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
    rec = Recorder(int(skip), int(steps))
    rec.clock["main"] = started
    apply(settings, rec)
    _record_steps(rec)
    sampler = None
    try:
        from ..sampler import Sampler

        sampler = Sampler(hz=10).start() if rec.cuda else None
    except Exception:
        sampler = None
    status, error = _run_script(rec, script, args)
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


def _record_steps(rec: Recorder) -> None:
    """Each optimizer step and each backward's loss, into the recorder."""
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    register_optimizer_step_post_hook(lambda opt, a, k: rec.on_step(opt))
    original_backward = torch.Tensor.backward

    def backward(self: Any, *a: Any, **k: Any) -> Any:
        rec.on_backward(self)
        return original_backward(self, *a, **k)

    torch.Tensor.backward = backward


def _run_script(rec: Recorder, script: str, args: list[str]) -> tuple[str, str]:
    """Run the script as __main__ until the recorder has its steps; (status, error): ok, short or failed."""
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
    except Done:
        pass
    except SystemExit as e:
        if e.code not in (None, 0):
            status, error = "failed", f"exited with code {e.code}"
    except BaseException as e:  # the variant crashed (or ran out of memory): report, do not hide
        status, error = "failed", _describe(e)
    return status, error


# The names the tests reach through this module (the child's injections now live with their changes).
__all__ = [
    "Recorder",
    "apply",
    "main",
    "phases",
    "seed_everything",
    "_async_batch_copies",
    "_autocast_outer_forward",
    "_graph_first_model",
    "_watch_lightning_log",
]


if __name__ == "__main__":
    main()
