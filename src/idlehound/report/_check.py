"""Impossible figures in a report document: each figure against the range it can take (tests and fuzzing)."""

from __future__ import annotations

import math
import re
from typing import Any, Optional

from ..metrics import MAX_COPY_GBPS, MAX_STEP_MS

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


def check_document(doc: dict[str, Any]) -> list[str]:
    """Impossible figures in a report document (an empty list when every figure is within its range)."""
    out: list[str] = []
    _finite(doc, "doc", out)
    if out:
        return out
    step = doc["metrics"]["step_ms"]["value"]
    for key, met in doc["metrics"].items():
        v = met["value"]
        hi = 100.0 if key in _PCT_METRICS else None
        _within(out, f"metrics.{key}", v, 0.0, hi)
    _within(out, "metrics.step_ms", step, 0.0, MAX_STEP_MS)  # > 0 before rounding; 0 steps are excluded
    step = step or 0.0
    _within(out, "metrics.gpu_idle_ms", doc["metrics"]["gpu_idle_ms"]["value"], 0.0, step + _TOL)
    _parts(out, "breakdown_ms", doc["breakdown_ms"], step, exact=True)
    idle = doc["metrics"]["gpu_idle_ms"]["value"]
    _parts(out, "idle_by_cause_ms", doc["idle_by_cause_ms"], idle if idle is not None else step)
    for s in doc["steps"]:
        d = s["duration_ms"]
        _within(out, f"steps[{s['number']}].duration_ms", d, 0.0, MAX_STEP_MS)
        _within(out, f"steps[{s['number']}].gpu_busy_pct", s["gpu_busy_pct"], 0.0, 100.0)
        _parts(
            out,
            f"steps[{s['number']}].breakdown_ms",
            s["breakdown_ms"],
            d or 0.0,
            exact=bool(s["breakdown_ms"]),
        )
        _parts(out, f"steps[{s['number']}].idle_ms", s["idle_ms"], d or 0.0)
    k = doc["kernels"]
    longest_us = 1e3 * max((s["duration_ms"] or 0.0 for s in doc["steps"]), default=0.0)
    for q in ("p50_us", "p90_us", "max_us"):
        _within(out, f"kernels.{q}", k[q], 0.0, longest_us + _TOL * 1e3)
    _within(out, "kernels.count_per_step", k["count_per_step"], 0.0, None)
    _within(out, "kernels.ms_per_step", k["ms_per_step"], 0.0, None)
    for c in doc["copies"]:
        _within(out, f"copies.{c['direction']}.ms_per_step", c["ms_per_step"], 0.0, None)
        _within(out, f"copies.{c['direction']}.mb_per_step", c["mb_per_step"], 0.0, None)
        _within(out, f"copies.{c['direction']}.bandwidth_gbps", c["bandwidth_gbps"], 0.0, MAX_COPY_GBPS)
        _within(out, f"copies.{c['direction']}.pageable_pct", c["pageable_pct"], 0.0, 100.0)
    _memory_ok(out, doc["memory"])
    for s in doc["sync_points"]:
        for key in ("count_per_step", "idle_after_ms_per_step", "blocked_ms_per_step"):
            _within(
                out,
                f"sync_points.{key}",
                s[key],
                0.0,
                step + _TOL if key == "idle_after_ms_per_step" else None,
            )
    for ln in doc["idle_by_line"] + doc.get("idle_by_library_line", []):
        _within(out, "idle_by_line.idle_ms_per_step", ln["idle_ms_per_step"], 0.0, step + _TOL)
    dl = doc["dataloader"]
    _within(out, "dataloader.host_ms_per_step", dl["host_ms_per_step"], 0.0, None)
    _within(out, "dataloader.exposed_ms_per_step", dl["exposed_ms_per_step"], 0.0, step + _TOL)
    for f in doc["findings"]:
        _within(
            out,
            f"findings.{f['cause']}.recoverable_ms_per_step",
            f["recoverable_ms_per_step"],
            0.0,
            step + _TOL if f["kind"] == "idle" else None,
        )
        _within(
            out,
            f"findings.{f['cause']}.recoverable_share_of_step",
            f["recoverable_share_of_step"],
            0.0,
            1.0001 if f["kind"] == "idle" else None,
        )
        for key, point in (
            ("recoverable_ms_range", "recoverable_ms_per_step"),
            ("recoverable_share_range", "recoverable_share_of_step"),
        ):
            if f.get(key):  # the point figure lies inside its range (rounded to 4 decimals)
                _within(out, f"findings.{f['cause']}.{point}", f[point], f[key][0] - 1e-4, f[key][1] + 1e-4)
    # a figure printed as nan/inf (not words: the HF Trainer's "NaN/Inf loss check" is a title)
    if re.search(r"\b0\.00 of 0\.00 ms|\b(nan|inf)( ms|%)", doc["headline"], re.IGNORECASE):
        out.append(f"headline: {doc['headline']!r}")
    return out


def _memory_ok(out: list[str], m: dict[str, Any]) -> None:
    for key in ("peak_allocated_gib", "peak_reserved_gib", "allocs_per_step"):
        _within(out, f"memory.{key}", m[key], 0.0, None)
    _within(out, "memory.capacity_gib", m["capacity_gib"], 1e-9, None)
    if m["peak_allocated_gib"] is not None and m["peak_reserved_gib"] is not None:
        _within(
            out, "memory.peak_allocated_gib", m["peak_allocated_gib"], 0.0, m["peak_reserved_gib"] + 0.001
        )
    if m["capacity_gib"] is not None and m["peak_reserved_gib"] is not None:
        _within(out, "memory.peak_reserved_gib", m["peak_reserved_gib"], 0.0, m["capacity_gib"] + 0.001)


def _within(out: list[str], name: str, v: Optional[float], lo: float, hi: Optional[float]) -> None:
    if v is None:
        return
    if not isinstance(v, (int, float)) or v < lo or (hi is not None and v > hi):
        out.append(f"{name} = {v!r} (possible: {lo:g} to {'any' if hi is None else f'{hi:g}'})")


def _parts(out: list[str], name: str, parts: dict[str, Any], total: float, exact: bool = False) -> None:
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
