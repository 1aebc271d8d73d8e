"""TensorBoard scalar summaries, so runs compare in TensorBoard's Scalars tab.

Written with TensorBoard's own event-file writer (no torch needed). Without the tensorboard package nothing is
written and the caller is told why.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional, Union

from . import model as m
from .model import typed

NOT_INSTALLED = "tensorboard is not installed: no scalar summaries written (pip install tensorboard)"


def missing_note() -> Optional[str]:
    """Why no scalars will be written (NOT_INSTALLED), known before the analysis; None with tensorboard."""
    try:
        import tensorboard  # noqa: F401  (its top level is light: the writer's modules load on use)
    except ImportError:
        return NOT_INSTALLED
    return None


def _writer(folder: Path) -> tuple[Any, Any, Any]:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    return EventFileWriter(str(folder), filename_suffix=".idlehound"), Event, Summary


def scalars_of(doc: Union[m.Report, Mapping[str, Any]]) -> dict[str, float]:
    """The scalars written for one analysis: headline metrics, breakdown shares and idle causes."""
    doc = typed(doc, m.Report)
    out: dict[str, float] = {}
    for key, met in doc.metrics.items():
        if met.value is not None:
            out[f"idlehound/{key}"] = float(met.value)
    step = doc.metrics["step_ms"].value or 0.0
    for k, v in doc.breakdown_ms.items():
        if step:
            out[f"breakdown_pct/{k}"] = 100.0 * (v or 0.0) / step
    for k, v in doc.idle_by_cause_ms.items():
        out[f"idle_ms/{k}"] = float(v or 0.0)
    run = doc.run
    for k in ("unprofiled_step_ms", "profiled_step_ms", "profiler_overhead"):
        if isinstance(run.get(k), (int, float)):
            out[f"run/{k}"] = float(run[k])
    return out


def write_scalars(folder: Path, values: dict[str, float], step: int = 0) -> Optional[str]:
    """Write values as scalars at `step` into folder; returns None, or why nothing was written."""
    try:
        w, Event, Summary = _writer(folder)
    except ImportError:
        return NOT_INSTALLED
    summary = Summary(value=[Summary.Value(tag=k, simple_value=v) for k, v in values.items()])
    w.add_event(Event(wall_time=time.time(), step=step, summary=summary))
    w.close()
    return None


def write_ladder_scalars(folder: Path, doc: Union[m.Ladder, Mapping[str, Any]]) -> Optional[str]:
    """One point per rung (step = rung index): samples/s, ms/step, GPU busy, speed-up."""
    lad = typed(doc, m.Ladder)
    try:
        w, Event, Summary = _writer(folder)
    except ImportError:
        return NOT_INSTALLED
    for i, r in enumerate(lad.rungs):
        figures = {
            "samples_per_s": r.samples_per_s,
            "ms_per_step": r.ms_per_step,
            "gpu_busy_pct": r.gpu_busy_pct,
            "speedup": r.speedup,
            "pct_of_ceiling": r.pct_of_ceiling,
        }
        vals = {f"ladder/{k}": float(v) for k, v in figures.items() if v is not None}
        if vals:
            w.add_event(
                Event(
                    wall_time=time.time(),
                    step=i,
                    summary=Summary(value=[Summary.Value(tag=k, simple_value=v) for k, v in vals.items()]),
                )
            )
    w.close()
    return None
