"""The step bookkeeping of a capture session: what ends a step (optimizer.step(), the next batch, a named
function), the child processes a script starts, and the step times inside and outside the window."""

from __future__ import annotations

import statistics
import sys
from types import FrameType
from typing import Any, Callable, Optional

from ..vocabulary import RECORDING, STEP_MODES, ProfilerAction, StepOn

RECORDED = RECORDING  # the profiler's actions while it records a step


def step_hook(
    how: StepOn, step: Callable[[], None], on_optimizer_step: Callable[..., None]
) -> Optional[Callable[[], None]]:
    """Call `step` at the end of each step as `how` (--step-on) finds it; the undo, or None for "manual"."""
    if how not in STEP_MODES:
        return _step_on_function(how, step)
    if how == "optimizer":
        from torch.optim.optimizer import register_optimizer_step_post_hook

        handle = register_optimizer_step_post_hook(on_optimizer_step)
        return lambda: handle.remove()
    if how == "dataloader":
        from torch.utils.data import dataloader as dl

        original = dl._BaseDataLoaderIter.__next__
        started = [False]

        def __next__(it: Any) -> Any:
            if started[0]:
                step()
            started[0] = True
            return original(it)

        dl._BaseDataLoaderIter.__next__ = __next__
        return lambda: setattr(dl._BaseDataLoaderIter, "__next__", original)
    return None  # manual: the script calls step()


def _step_on_function(name: str, step: Callable[[], None]) -> Callable[[], None]:
    """Step each time a Python function called `name` returns (main thread).

    Through sys.settrace, not sys.setprofile: the profiler's Python-stack tracer takes the profile hook when
    it starts, which silenced the old hook for the rest of the run. Only frames of `name` get a local tracer,
    with line events off, so other code pays one call check.
    """
    previous = sys.gettrace()

    def on_return(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "return":
            step()
        return on_return

    def tracer(frame: FrameType, event: Any, arg: Any) -> Any:
        if event == "call" and frame.f_code.co_name == name:
            frame.f_trace_lines = False
            return on_return
        return previous(frame, event, arg) if previous is not None else None

    sys.settrace(tracer)
    return lambda: sys.settrace(previous)


def count_child_processes(facts: dict[str, int]) -> Callable[[], None]:
    """Count processes the script starts (Hogwild, mp.spawn), DataLoader workers aside: a script that trains
    only in children makes no step here, and the user should hear that rather than 'lower --skip'."""
    from multiprocessing.process import BaseProcess

    original = BaseProcess.start

    def start(proc: BaseProcess) -> None:
        if "_worker_loop" not in getattr(getattr(proc, "_target", None), "__name__", ""):
            facts["child_processes"] += 1
        return original(proc)

    BaseProcess.start = start  # type: ignore[method-assign,assignment]  # counting child processes: patched on purpose
    return lambda: setattr(BaseProcess, "start", original)


def step_timing(
    step_times: list[tuple[float, ProfilerAction]],
    gpu_marks: list[tuple[Any, ProfilerAction]],
    synchronize: Callable[[], None],
    steps_seen: int,
) -> dict[str, Any]:
    """Median step time outside and inside the profiled window: the observer effect.

    On CUDA, steps are timed by events recorded on the stream at each step end (gpu_marks: the GPU's pace,
    which the host clock misses while the CPU runs ahead); without two of them, by the host clock.
    """
    if len(gpu_marks) > 1:
        synchronize()
        pairs = [(a0, e0.elapsed_time(e1)) for (e0, a0), (e1, _) in zip(gpu_marks, gpu_marks[1:])]
        clock = "cuda_events"
    else:
        ts = step_times
        pairs = [(a0, (t1 - t0) * 1e3) for (t0, a0), (t1, _) in zip(ts, ts[1:])]
        clock = "host"
    outside = [ms for a, ms in pairs if a not in RECORDED]
    inside = [ms for a, ms in pairs if a in RECORDED]
    # Every unprofiled step, before and after the window: the replay fits its host rate to their mean.
    first = next((i for i, (a, _) in enumerate(pairs) if a in RECORDED), len(pairs))
    last = max((i for i, (a, _) in enumerate(pairs) if a in RECORDED), default=len(pairs))
    # An interval is labelled by the step that opened it: the last "NONE" one already runs the profiler.
    steps_before = [round(ms, 4) for a, ms in pairs[:first] if a == ProfilerAction.NONE][:-1]
    steps_after = [round(ms, 4) for _, ms in pairs[last + 1 :]]
    outside = outside[3:] if len(outside) > 6 else outside  # first steps warm up caches and compile
    out: dict[str, Any] = {
        "steps_seen": steps_seen,
        "step_clock": clock,
        "step_ms_before_window": steps_before,
        "step_ms_after_window": steps_after,
    }
    if outside:
        out["unprofiled_step_ms"] = round(statistics.median(outside), 3)
    if inside:
        out["profiled_step_ms"] = round(statistics.median(inside), 3)
    if outside and inside:
        out["profiler_overhead"] = round(out["profiled_step_ms"] / max(out["unprofiled_step_ms"], 1e-9), 3)
    return out
