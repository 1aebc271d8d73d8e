"""The report as plain data: the JSON schema, and the single source every renderer reads.

Numbers are rounded here, once, so the terminal, markdown, HTML and JSON show the same figures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any, Literal, Optional

import msgspec

from .._version import __version__
from ..analysis import FITTED_CORRECTION, NO_USER_FRAME, Analysis, IdleLine, SourceLoc, unprofiled_step
from ..analysis import Step as StepInfo
from ..diagnose import (
    DEFAULT,
    IDLE_CAUSE_INFO,
    IDLE_CAUSE_LABELS,
    Diagnosis,
    Finding,
    IdleCause,
    clears_bar,
)
from ..metrics import METRICS, status
from . import model as m
from ._check import _finite
from ._check import check_document as check_document  # where tests and fuzzing import it from
from .model import as_data, encode, rnd
from .sections import build_sections

SCHEMA: Literal["idlehound/analysis"] = "idlehound/analysis"
SCHEMA_VERSION: Literal[2] = 2


def build(a: Analysis, d: Diagnosis) -> dict[str, Any]:
    """The versioned report document (docs/json-schema.md) as plain data, for the Python API (`Result.doc`)."""
    return as_data(build_model(a, d))


def build_model(a: Analysis, d: Diagnosis) -> m.Report:
    """The versioned report document (docs/json-schema.md), what every renderer reads. Every number in it is
    finite: a figure that is not is reported as null, with a note."""
    doc = _report(a, d)
    dropped: list[str] = []
    data = _finite_only(as_data(doc), "", dropped)
    if not dropped:
        return doc
    data["notes"].append(  # a backstop: validation upstream should leave nothing here
        f"{len(dropped)} figure(s) were not finite numbers and are reported as null: "
        + ", ".join(dropped[:5])
    )
    return msgspec.convert(data, m.Report)


def to_json(doc: dict[str, Any], indent: int = 2) -> str:
    """Strict JSON text of a document (raises ValueError on NaN or Infinity rather than writing them)."""
    bad: list[str] = []
    _finite(doc, "doc", bad)
    if bad:
        raise ValueError(f"not a finite number: {bad[0]}")
    return encode(doc, indent)


def _finite_only(x: Any, where: str, dropped: list[str]) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        dropped.append(where.lstrip(".") or "value")
        return None
    if isinstance(x, dict):
        return {k: _finite_only(v, f"{where}.{k}", dropped) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite_only(v, f"{where}[{i}]", dropped) for i, v in enumerate(x)]
    return x


def _loc(loc: Optional[SourceLoc]) -> Optional[m.Location]:
    if loc is None:
        return None
    snip = None if loc.snippet is None else m.Snippet(first_line=loc.snippet[0], lines=list(loc.snippet[1]))
    return m.Location(file=loc.file, line=loc.line, function=loc.function, exact=loc.exact, snippet=snip)


def _idle_lines(a: Analysis, lines: list[IdleLine]) -> list[m.IdleLine]:
    return [
        m.IdleLine(
            cause=ln.cause,
            location=_loc(ln.location),
            idle_ms_per_step=rnd(a.per_step_ms(ln.idle_ns)),
            gaps=ln.gaps,
        )
        for ln in lines
    ]


def _report(a: Analysis, d: Diagnosis) -> m.Report:
    """The report document as its Struct; every figure rounded here, once (report/model.py, docs)."""
    n = a.n_steps
    return m.Report(
        schema=SCHEMA,
        schema_version=SCHEMA_VERSION,
        tool=m.Tool(name="idlehound", version=__version__),
        headline=headline(a, d.findings),
        trace=_trace(a),
        device=_device(a),
        metrics=_metrics(a),
        breakdown_ms={k: rnd(a.per_step_ms(v)) for k, v in a.breakdown_ns.items()},
        idle_by_cause_ms={k: rnd(a.per_step_ms(v)) for k, v in a.idle_ns.items()},
        idle_gaps_per_step=rnd(a.gap_count / n, m.PCT) if a.gpu_recorded else None,
        idle_by_line=_idle_lines(a, a.idle_lines),
        idle_by_library_line=_idle_lines(a, a.idle_library_lines),
        steps=[_step(s) for s in a.steps],
        sync_points=_sync_points(a),
        copies=_copies(a),
        kernels=_kernels(a),
        memory=_memory(a),
        dataloader=m.DataLoader(
            iterator=a.dataloader.iterator,
            workers_in_use=a.dataloader.workers_in_use,
            host_ms_per_step=rnd(a.per_step_ms(a.dataloader.host_ns)),
            exposed_ms_per_step=rnd(a.per_step_ms(a.idle_ns.get("data_loading", 0))),
            location=_loc(a.dataloader.location),
        ),
        timeline=m.Timeline(**a.timeline),
        utilization_curve=_curve(a.run_info.get("utilization_curve")),
        findings=[finding_model(f) for f in d.findings],
        not_checked=[m.NotChecked(**n) for n in d.not_checked],  # rules not run: the trace lacks their data
        replay=_replay(a, d.prediction),
        notes=list(a.notes),  # a copy: a note the analysis gets later is not in this document
        run={k: v for k, v in a.run_info.items() if k != "utilization_curve"},
        sections=build_sections(a, list(d.findings)),
    )


def _trace(a: Analysis) -> m.TraceInfo:
    t = a.trace
    return m.TraceInfo(
        path=str(t.path),
        worker=t.worker,
        size_bytes=t.size_bytes,
        with_stack=t.with_stack,
        cuda_run=t.cuda_run,
        gpu_recorded=a.gpu_recorded,
        step_source=a.step_source,
        steps=[s.number for s in a.steps],
        workers=sorted({f.worker for f in t.run_files}),
    )


def _device(a: Analysis) -> m.Device:
    return m.Device(
        name=a.device.name,
        index=a.device.index,
        compute_capability=list(a.device.compute_capability) if a.device.compute_capability else None,
        memory_bytes=a.device.memory_bytes,
        devices_seen=a.device.devices_seen,
        accelerator=a.device.accelerator,
    )


def _sync_points(a: Analysis) -> list[m.SyncPoint]:
    n = a.n_steps
    return [
        m.SyncPoint(
            kind=s.kind,
            op=s.op,
            call=s.call,
            python=s.python,
            location=_loc(s.location),
            count_per_step=rnd(s.count / n),
            idle_after_ms_per_step=rnd(a.per_step_ms(s.idle_after_ns)),
            blocked_ms_per_step=rnd(a.per_step_ms(s.blocked_ns)),
        )
        for s in a.sync_sites
    ]


def _copies(a: Analysis) -> list[m.Copy]:
    n = a.n_steps
    return [
        m.Copy(
            direction=c.direction,
            count_per_step=rnd(c.count / n),
            mb_per_step=rnd(c.bytes / n / 1e6),
            ms_per_step=rnd(a.per_step_ms(c.time_ns)),
            bandwidth_gbps=rnd(c.bandwidth_gbps, m.PCT),
            pageable_pct=rnd(100 * c.pageable_bytes / c.bytes if c.bytes else 0.0, 1),
        )
        for c in a.copies.values()
    ]


def finding_model(f: Finding) -> m.Finding:
    return m.Finding(
        cause=_word(f.cause),
        title=f.title,
        severity=_word(f.severity),
        kind=_word(f.kind),
        recoverable_ms_per_step=rnd(f.recoverable_ms, m.SHARE),
        recoverable_share_of_step=rnd(f.share, m.SHARE),
        recoverable_ms_range=_pair(f.range_ms, m.SHARE),
        recoverable_share_range=_pair(f.share_ends, m.SHARE),
        location=_loc(f.location),
        evidence=list(f.evidence),
        fix=f.fix,
        code=f.code,
        details=dict(f.details),
    )


def _word(x: object) -> str:
    """A finding's cause, severity or kind as its text (an enum member as its value, as JSON writes it)."""
    return str(x.value) if isinstance(x, Enum) else str(x)


def _curve(c: Any) -> Optional[m.UtilizationCurve]:
    """The run's sampler curve as run.json stored it (validated when the run folder was read)."""
    if not isinstance(c, dict):
        return None
    return m.UtilizationCurve(source=c.get("source", ""), samples=c.get("samples", []))


def _metrics(a: Analysis) -> dict[str, m.Metric]:
    k = a.kernels
    win = a.window_ns or 1
    h2d = a.copies.get("HtoD")
    matmul = k.fp32_matmul_ns + k.tensor_core_ns
    mem = a.memory
    values = {
        "step_ms": a.step_ms,
        "unprofiled_step_ms": unprofiled_step(a.run_info).get("unprofiled_ms"),
        "gpu_util": a.gpu_busy_pct,
        "gpu_idle_ms": a.per_step_ms(a.window_ns - a.busy_ns) if a.gpu_recorded else None,
        "kernel_pct": 100 * a.breakdown_ns.get("Kernel", 0) / win if a.gpu_recorded else None,
        "dataloader_pct": 100
        * (a.idle_ns.get("data_loading", 0) if a.gpu_recorded else a.breakdown_ns.get("DataLoader", 0))
        / win,
        "sm_efficiency": 100 * k.sm_efficiency if k.sm_efficiency is not None else None,
        "occupancy": k.occupancy,
        "kernels_per_step": k.count / a.n_steps if a.gpu_recorded else None,
        "median_kernel_us": k.p50_us,
        "short_kernel_pct": 100 * k.shorter_than_launch if k.shorter_than_launch is not None else None,
        "sync_per_step": sum(s.count for s in a.sync_sites) / a.n_steps if a.gpu_recorded else None,
        "tensor_core_pct": 100 * k.tensor_core_ns / matmul if matmul else None,
        "h2d_gbps": h2d.bandwidth_gbps if h2d else None,
        "pageable_pct": 100 * h2d.pageable_bytes / h2d.bytes if h2d and h2d.bytes else None,
        "peak_mem_pct": 100 * mem.peak_reserved / mem.capacity
        if mem.peak_reserved and mem.capacity
        else None,
    }
    out = {}
    for key, v in values.items():
        d = METRICS[key]
        v = rnd(v, m.PCT)
        out[key] = m.Metric(
            value=v,
            unit=d.unit,
            label=d.label,
            status=status(key, v),
            ideal=d.ideal,
            problem=d.problem,
            higher_is_better=d.higher_is_better,
        )
    return out


def _step(s: StepInfo) -> m.Step:
    d = s.duration_ns or 1
    return m.Step(
        number=s.number,
        duration_ms=rnd(s.duration_ns / 1e6),
        gpu_busy_pct=rnd(100 * s.gpu_busy_ns / d, m.PCT),
        breakdown_ms={k: rnd(v / 1e6) for k, v in s.breakdown_ns.items()},
        idle_ms={k: rnd(v / 1e6) for k, v in s.idle_ns.items()},
        start_ns=s.start_ns,
        end_ns=s.end_ns,
        sync_calls=s.sync_calls,
    )


def _kernels(a: Analysis) -> m.Kernels:
    k = a.kernels
    n = a.n_steps
    return m.Kernels(
        count_per_step=rnd(k.count / n),
        ms_per_step=rnd(a.per_step_ms(k.time_ns)),
        p50_us=rnd(k.p50_us, m.PCT),
        p90_us=rnd(k.p90_us, m.PCT),
        max_us=rnd(k.max_us, m.PCT),
        fp32_matmul_ms_per_step=rnd(a.per_step_ms(k.fp32_matmul_ns)),
        tensor_core_ms_per_step=rnd(a.per_step_ms(k.tensor_core_ns)),
        fp32_matmul_ops=k.fp32_matmul_ops,
        top=[
            m.KernelFamily(
                name=g.name,
                count_per_step=rnd(g.count / n),
                ms_per_step=rnd(a.per_step_ms(g.time_ns)),
                precision=g.precision,
            )
            for g in k.top
        ],
    )


def _memory(a: Analysis) -> m.Memory:
    mem = a.memory
    gib = 2**30
    return m.Memory(
        recorded=mem.recorded,
        peak_allocated_gib=rnd(mem.peak_allocated / gib if mem.peak_allocated else None),
        peak_reserved_gib=rnd(mem.peak_reserved / gib if mem.peak_reserved else None),
        capacity_gib=rnd(mem.capacity / gib if mem.capacity else None),
        allocs_per_step=rnd(mem.allocs_per_step, 1),
        empty_cache_calls=mem.empty_cache_calls,
        allocator_calls=mem.allocator_calls,
        curve=[(int(t), rnd(b / gib, 4)) for t, b in mem.curve],
    )


CAUSE_WORDS = IDLE_CAUSE_LABELS  # kept for the renderers that import it from here
# Under the idle-by-line tables: a line's idle time is not what fixing it gives back (a host-bound loop stays idle).
IDLE_LINES_NOTE = "GPU idle time as measured; what a fix gives back is its finding's figure (the replay)."


def headline(a: Analysis, findings: Sequence[Finding]) -> str:
    step = _ms(a.step_ms)
    if not a.gpu_recorded:
        if a.device.unmeasured:
            return (
                f"{a.device.accelerator} trace: its device events are not measured by idlehound (CUDA and ROCm "
                f"only); the host side is analysed; a step took {a.step_ms:.2f} ms."
            )
        if a.trace.cuda_run:
            return (
                "No GPU activity was recorded (CUPTI did not start): only the host side is analysed; "
                f"a step took {step} ms."
            )
        return f"CPU-only trace: a step took {step} ms{_unprofiled_words(a)}; no GPU to keep busy."
    busy = a.gpu_busy_pct or 0.0
    idle_ms = _ms(a.per_step_ms(a.window_ns - a.busy_ns))
    # ranked by the low end of the replay's predicted gain; named only when that low end clears the bar
    top = next((f for f in findings if clears_bar(f, DEFAULT)), None)
    if top is None:
        if busy >= (METRICS["gpu_util"].ideal or 0.0):
            return f"GPU busy {busy:.1f}% of each {step} ms step: no significant idle time."
        cause = max(a.idle_ns, key=lambda c: a.idle_ns[c])  # the idle table's largest row
        unsure = any(f.kind != "risk" for f in findings)  # findings whose range reaches below the bar
        return (
            f"GPU idle {100 - busy:.1f}% of each step ({idle_ms} of {step} ms), mostly "
            f"{IDLE_CAUSE_INFO[IdleCause(cause)].during} ({_ms(a.per_step_ms(a.idle_ns[cause]))} ms), yet the replay predicts no single "
            + (
                "fix surely gives back 5% of the step (the low end of each range is below it): see the findings."
                if unsure
                else "fix gives back 5% of the step: the host's own work sets the pace."
            )
        )
    where = f" at {top.location}" if top.location else ""
    # the finding's share is of the replayed step: the measured unprofiled one only where the fit to it was used
    fitted = a.observer.get("correction") == FITTED_CORRECTION
    which = "unprofiled step" if fitted else "replayed step"
    return (
        f"GPU idle {100 - busy:.1f}% of each step ({idle_ms} of {step} ms); top fix: "
        f"{top.title.lower()} ({_ms(top.recoverable_ms)} ms per step recoverable, {100 * top.share:.0f}% of "
        f"the {_ms(top.step_ms)} ms {which}{where})."
    )


def _unprofiled_words(a: Analysis) -> str:
    """' under the profiler (X ms without it)' where run.json has the unprofiled steps, else ''."""
    un = unprofiled_step(a.run_info).get("unprofiled_ms")
    return "" if un is None else f" under the profiler ({_ms(un)} ms without it)"


def _ms(x: float) -> str:
    """Two decimals, or three significant digits for times under 0.01 ms (never '0.00' for a real step)."""
    return f"{x:.2f}" if x >= 0.01 or x == 0 else f"{x:.3g}"


def _replay(a: Analysis, pred: Mapping[str, Any]) -> Optional[m.Replay]:
    """The replay's baseline, observer fit and best stack of fixes (docs/metrics.md, Replay)."""
    if a.replay is None:
        return None
    obs = a.observer
    return m.Replay(
        recorded_step_ms=rnd(obs.get("recorded_ms")),
        replayed_step_ms=rnd(obs.get("replayed_ms")),
        unprofiled_step_ms=rnd(obs.get("unprofiled_ms")),
        unprofiled_source=obs.get("source"),
        host_rate=rnd(obs.get("host_rate")),
        predicted_step_ms=rnd(obs.get("predicted_ms")),
        best_stack=pred.get("stack", []),
        best_stack_step_ms=rnd(pred.get("stack_step_ms")),
        best_stack_gain_ms=rnd(pred.get("stack_gain_ms")),
        overhead_us=rnd(obs.get("overhead_us")),
        correction=obs.get("correction", "none"),
        overhead_us_range=_pair([x / 1e3 for x in obs["overhead_range_ns"]])
        if "overhead_range_ns" in obs
        else None,
        fit_not_used=obs.get("fit_not_used"),
        predicted_step_range_ms=_pair(obs["predicted_range_ms"]) if "predicted_range_ms" in obs else None,
        best_stack_step_range_ms=_pair(pred["stack_step_range_ms"])
        if "stack_step_range_ms" in pred
        else None,
        best_stack_gain_range_ms=_pair(pred["stack_gain_range_ms"])
        if "stack_gain_range_ms" in pred
        else None,
    )


def _pair(x: Any, digits: int = 3) -> tuple[float, float]:
    lo, hi = (float(v) for v in x)
    return rnd(lo, digits), rnd(hi, digits)


def range_text(f: m.Finding) -> str:
    """A finding's range as every renderer prints it after its share (docs/metrics.md, Intervals); none in a
    document of version 1."""
    if not f.recoverable_ms_range or not f.recoverable_share_range:
        return ""
    (lo, hi), (slo, shi) = f.recoverable_ms_range, f.recoverable_share_range
    return f"; range {lo:.3f}-{hi:.3f} ms, {100 * slo:.1f}-{100 * shi:.1f}%"


def not_checked_by_need(doc: m.Report) -> dict[str, list[str]]:
    """The rules not checked, grouped by what they need (one line each in the renderers)."""
    out: dict[str, list[str]] = {}
    found = {f.cause for f in doc.findings}
    for n in doc.not_checked:
        if found & set(n.causes):  # a finding of that cause stands above: it was seen after all
            continue
        out.setdefault(n.needs, []).append(n.rule)
    return out


def where(loc: Optional[m.Location]) -> str:
    """A location as every table writes it: 'file:line' ('(no user frame)' for none)."""
    return NO_USER_FRAME if loc is None else f"{loc.file}:{loc.line}"


def cause_words(cause: str) -> str:
    return CAUSE_WORDS.get(cause, cause)
