"""`idlehound compare A B`: two runs or traces side by side, with deltas and the findings that changed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional, Union

from .report import model as m
from .report.model import rnd

__all__ = ["compare_docs", "compare_model", "samples_per_s"]  # the renderer lives in report/


def samples_per_s(doc: m.Report) -> Optional[float]:
    """Throughput of a captured run outside the profiled window, when its batch size is known."""
    run = doc.run
    bs = ((run.get("workload") or {}).get("config") or {}).get("batch_size") or (
        run.get("dataloader") or {}
    ).get("batch_size")
    ms = run.get("unprofiled_step_ms")
    return rnd(bs * 1000.0 / ms, 1) if bs and ms else None


def _row(label: str, a: Optional[float], b: Optional[float], unit: str = "") -> m.CompareRow:
    delta = None if a is None or b is None else rnd(b - a)
    pct = None if a in (None, 0) or b is None else rnd(100.0 * (b - a) / a, 1)
    return m.CompareRow(label=label, a=a, b=b, delta=delta, delta_pct=pct, unit=unit)


Doc = Union[m.Report, Mapping[str, Any]]


def compare_docs(a: Doc, b: Doc) -> dict[str, Any]:
    """The comparison document (schema idlehound/compare, version 1) as plain data (the Python API's view)."""
    return m.as_data(compare_model(a, b))


def compare_model(a: Doc, b: Doc) -> m.Compare:
    """The comparison document of two report documents (Structs, or their plain data), what report.write takes."""
    ra, rb = m.typed(a, m.Report), m.typed(b, m.Report)
    fa = {f.cause: f for f in ra.findings}
    fb = {f.cause: f for f in rb.findings}
    # A cause one side could not check is neither gone nor new there (older documents: every rule ran).
    ua = {c for n in ra.not_checked for c in n.causes}
    ub = {c for n in rb.not_checked for c in n.causes}
    return m.Compare(
        schema="idlehound/compare",
        schema_version=1,
        a=m.CompareSide(path=ra.trace.path, headline=ra.headline),
        b=m.CompareSide(path=rb.trace.path, headline=rb.headline),
        metrics=_metrics(ra, rb),
        breakdown_ms=_parts(ra.breakdown_ms, rb.breakdown_ms),
        idle_by_cause_ms=_parts(ra.idle_by_cause_ms, rb.idle_by_cause_ms),
        kernels_ms=_kernels(ra, rb),
        memory=_memory(ra.memory, rb.memory),
        findings_gone=[_brief(fa[c]) for c in fa if c not in fb and c not in ub],
        findings_new=[_brief(fb[c]) for c in fb if c not in fa and c not in ua],
        findings_unchecked=[_unchecked(fa[c], "A", "B") for c in fa if c in ub]
        + [_unchecked(fb[c], "B", "A") for c in fb if c in ua],
        findings_kept=[
            m.FindingKept(
                cause=c,
                title=fb[c].title,
                a_ms=fa[c].recoverable_ms_per_step,
                b_ms=fb[c].recoverable_ms_per_step,
            )
            for c in fb
            if c in fa
        ],
    )


def _metrics(a: m.Report, b: m.Report) -> list[m.CompareRow]:
    rows = [
        _row(x.label, x.value, b.metrics[k].value, x.unit)
        for k, x in a.metrics.items()
        if x.value is not None or b.metrics[k].value is not None
    ]
    rows.insert(1, _row("Samples/s (unprofiled)", samples_per_s(a), samples_per_s(b), "/s"))
    return rows


def _parts(a: dict[str, Optional[float]], b: dict[str, Optional[float]]) -> list[m.CompareRow]:
    """A row per category either side spent time in, in A's order."""
    return [_row(k, a.get(k), b.get(k), "ms") for k in a if a.get(k) or b.get(k)]


def _kernels(a: m.Report, b: m.Report) -> list[m.CompareRow]:
    ka = {k.name: k.ms_per_step for k in a.kernels.top}
    kb = {k.name: k.ms_per_step for k in b.kernels.top}
    names = dict.fromkeys(
        [*ka, *kb]
    )  # A's order, then B's new names: ties keep it (a set's order varied by run)
    rows = (_row(n, ka.get(n), kb.get(n), "ms") for n in names)
    return sorted(rows, key=lambda x: -max(x.a or 0, x.b or 0))[:10]


def _memory(a: m.Memory, b: m.Memory) -> list[m.CompareRow]:
    pairs = (
        ("Peak allocated", a.peak_allocated_gib, b.peak_allocated_gib),
        ("Peak reserved", a.peak_reserved_gib, b.peak_reserved_gib),
    )
    return [_row(label, x, y, "GiB") for label, x, y in pairs if x is not None or y is not None]


def _brief(f: m.Finding) -> m.FindingBrief:
    return m.FindingBrief(cause=f.cause, title=f.title, ms=f.recoverable_ms_per_step)


def _unchecked(f: m.Finding, side: str, other: str) -> m.FindingUnchecked:
    return m.FindingUnchecked(
        cause=f.cause, title=f.title, ms=f.recoverable_ms_per_step, in_=side, not_checked_in=other
    )
