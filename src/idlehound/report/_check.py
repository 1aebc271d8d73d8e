"""Impossible figures in a report document: each figure against the range it can take (tests and fuzzing)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Optional, Union

from ..metrics import MAX_COPY_GBPS, MAX_STEP_MS
from . import model as m
from .model import as_data, typed

# The range every figure of the document can take. A figure outside it cannot be right: the analysis
# must have excluded the data behind it (with a note) or stopped with an error instead.
_PCT_METRICS = (
    "gpu_util",
    "kernel_pct",
    "dataloader_pct",
    "sm_efficiency",
    "occupancy",
    "short_kernel_pct",
    "tensor_core_pct",
    "pageable_pct",
    "peak_mem_pct",
)
_TOL = 0.02  # rounding to 3 decimals, summed over a few parts


def check_document(doc: Union[m.Report, Mapping[str, Any]]) -> list[str]:
    """Impossible figures in a report document, its Struct or plain data (an empty list when every figure is
    within its range). Non-finite numbers are reported alone, first."""
    out: list[str] = []
    _finite(doc if isinstance(doc, Mapping) else as_data(doc), "doc", out)
    if out:
        return out
    r = typed(doc, m.Report)
    step = r.metrics["step_ms"].value
    for key, met in r.metrics.items():
        _within(out, f"metrics.{key}", met.value, 0.0, 100.0 if key in _PCT_METRICS else None)
    _within(out, "metrics.step_ms", step, 0.0, MAX_STEP_MS)  # > 0 before rounding; 0 steps are excluded
    step = step or 0.0
    idle = r.metrics["gpu_idle_ms"].value
    _within(out, "metrics.gpu_idle_ms", idle, 0.0, step + _TOL)
    _parts(out, "breakdown_ms", r.breakdown_ms, step, exact=True)
    _parts(out, "idle_by_cause_ms", r.idle_by_cause_ms, idle if idle is not None else step)
    _steps_ok(out, r.steps)
    _kernels_ok(out, r)
    _copies_ok(out, r.copies)
    _memory_ok(out, r.memory)
    _lines_ok(out, r, step)
    _findings_ok(out, r.findings, step)
    # a figure printed as nan/inf (not words: the HF Trainer's "NaN/Inf loss check" is a title)
    if re.search(r"\b0\.00 of 0\.00 ms|\b(nan|inf)( ms|%)", r.headline, re.IGNORECASE):
        out.append(f"headline: {r.headline!r}")
    return out


def _steps_ok(out: list[str], steps: list[m.Step]) -> None:
    for s in steps:
        d = s.duration_ms
        _within(out, f"steps[{s.number}].duration_ms", d, 0.0, MAX_STEP_MS)
        _within(out, f"steps[{s.number}].gpu_busy_pct", s.gpu_busy_pct, 0.0, 100.0)
        _parts(out, f"steps[{s.number}].breakdown_ms", s.breakdown_ms, d or 0.0, exact=bool(s.breakdown_ms))
        _parts(out, f"steps[{s.number}].idle_ms", s.idle_ms, d or 0.0)


def _kernels_ok(out: list[str], r: m.Report) -> None:
    k = r.kernels
    longest_us = 1e3 * max((s.duration_ms or 0.0 for s in r.steps), default=0.0)
    for q, v in (("p50_us", k.p50_us), ("p90_us", k.p90_us), ("max_us", k.max_us)):
        _within(out, f"kernels.{q}", v, 0.0, longest_us + _TOL * 1e3)
    _within(out, "kernels.count_per_step", k.count_per_step, 0.0, None)
    _within(out, "kernels.ms_per_step", k.ms_per_step, 0.0, None)


def _copies_ok(out: list[str], copies: list[m.Copy]) -> None:
    for c in copies:
        _within(out, f"copies.{c.direction}.ms_per_step", c.ms_per_step, 0.0, None)
        _within(out, f"copies.{c.direction}.mb_per_step", c.mb_per_step, 0.0, None)
        _within(out, f"copies.{c.direction}.bandwidth_gbps", c.bandwidth_gbps, 0.0, MAX_COPY_GBPS)
        _within(out, f"copies.{c.direction}.pageable_pct", c.pageable_pct, 0.0, 100.0)


def _lines_ok(out: list[str], r: m.Report, step: float) -> None:
    for s in r.sync_points:
        _within(out, "sync_points.count_per_step", s.count_per_step, 0.0, None)
        _within(out, "sync_points.idle_after_ms_per_step", s.idle_after_ms_per_step, 0.0, step + _TOL)
        _within(out, "sync_points.blocked_ms_per_step", s.blocked_ms_per_step, 0.0, None)
    for ln in r.idle_by_line + r.idle_by_library_line:
        _within(out, "idle_by_line.idle_ms_per_step", ln.idle_ms_per_step, 0.0, step + _TOL)
    dl = r.dataloader
    _within(out, "dataloader.host_ms_per_step", dl.host_ms_per_step, 0.0, None)
    _within(out, "dataloader.exposed_ms_per_step", dl.exposed_ms_per_step, 0.0, step + _TOL)


def _findings_ok(out: list[str], findings: list[m.Finding], step: float) -> None:
    for f in findings:
        idle = f.kind == "idle"
        ms, share = f.recoverable_ms_per_step, f.recoverable_share_of_step
        _within(out, f"findings.{f.cause}.recoverable_ms_per_step", ms, 0.0, step + _TOL if idle else None)
        _within(out, f"findings.{f.cause}.recoverable_share_of_step", share, 0.0, 1.0001 if idle else None)
        for point, v, rng in (
            ("recoverable_ms_per_step", ms, f.recoverable_ms_range),
            ("recoverable_share_of_step", share, f.recoverable_share_range),
        ):
            if rng:  # the point figure lies inside its range (rounded to 4 decimals)
                _within(out, f"findings.{f.cause}.{point}", v, rng[0] - 1e-4, rng[1] + 1e-4)


def _memory_ok(out: list[str], mem: m.Memory) -> None:
    for key, v in (
        ("peak_allocated_gib", mem.peak_allocated_gib),
        ("peak_reserved_gib", mem.peak_reserved_gib),
        ("allocs_per_step", mem.allocs_per_step),
    ):
        _within(out, f"memory.{key}", v, 0.0, None)
    _within(out, "memory.capacity_gib", mem.capacity_gib, 1e-9, None)
    if mem.peak_allocated_gib is not None and mem.peak_reserved_gib is not None:
        _within(out, "memory.peak_allocated_gib", mem.peak_allocated_gib, 0.0, mem.peak_reserved_gib + 0.001)
    if mem.capacity_gib is not None and mem.peak_reserved_gib is not None:
        _within(out, "memory.peak_reserved_gib", mem.peak_reserved_gib, 0.0, mem.capacity_gib + 0.001)


def _within(out: list[str], name: str, v: Optional[float], lo: float, hi: Optional[float]) -> None:
    if v is None:
        return
    if not isinstance(v, (int, float)) or v < lo or (hi is not None and v > hi):
        out.append(f"{name} = {v!r} (possible: {lo:g} to {'any' if hi is None else f'{hi:g}'})")


def _parts(
    out: list[str], name: str, parts: Mapping[str, Optional[float]], total: float, exact: bool = False
) -> None:
    """Parts of a whole: each >= 0, their sum at most the whole (equal to it when exact)."""
    for k, v in parts.items():
        _within(out, f"{name}.{k}", v, 0.0, None)
    s = sum(v or 0.0 for v in parts.values())
    tol = _TOL + 1e-6 * total
    if s > total + tol or (exact and abs(s - total) > tol):
        out.append(f"{name}: parts sum to {s:g}, the whole is {total:g}")


def _finite(x: Any, where: str, out: list[str]) -> None:
    if isinstance(x, float) and not math.isfinite(x):
        out.append(f"{where} = {x!r} (not a finite number)")
    elif isinstance(x, dict):
        for k, v in x.items():
            _finite(v, f"{where}.{k}", out)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            _finite(v, f"{where}[{i}]", out)
