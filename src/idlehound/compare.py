"""`idlehound compare A B`: two runs or traces side by side, with deltas and the findings that changed."""

from __future__ import annotations

from typing import Any, Optional

from .report import model as m
from .report.model import rnd

__all__ = ["compare_docs", "samples_per_s"]  # its renderers live in report/


def samples_per_s(doc: dict[str, Any]) -> Optional[float]:
    """Throughput of a captured run outside the profiled window, when its batch size is known."""
    run = doc.get("run") or {}
    bs = ((run.get("workload") or {}).get("config") or {}).get("batch_size") or (
        run.get("dataloader") or {}
    ).get("batch_size")
    ms = run.get("unprofiled_step_ms")
    return rnd(bs * 1000.0 / ms, 1) if bs and ms else None


def _row(label: str, a: Optional[float], b: Optional[float], unit: str = "") -> m.CompareRow:
    delta = None if a is None or b is None else rnd(b - a)
    pct = None if a in (None, 0) or b is None else rnd(100.0 * (b - a) / a, 1)
    return m.CompareRow(label=label, a=a, b=b, delta=delta, delta_pct=pct, unit=unit)


def compare_docs(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The comparison document (schema idlehound/compare, version 1) as plain data."""
    return m.as_data(compare_model(a, b))


def compare_model(a: dict[str, Any], b: dict[str, Any]) -> m.Compare:
    rows = [
        _row(x["label"], x["value"], b["metrics"][k]["value"], x["unit"])
        for k, x in a["metrics"].items()
        if x["value"] is not None or b["metrics"][k]["value"] is not None
    ]
    rows.insert(1, _row("Samples/s (unprofiled)", samples_per_s(a), samples_per_s(b), "/s"))
    breakdown = [
        _row(k, a["breakdown_ms"].get(k), b["breakdown_ms"].get(k), "ms")
        for k in a["breakdown_ms"]
        if a["breakdown_ms"].get(k) or b["breakdown_ms"].get(k)
    ]
    idle = [
        _row(k, a["idle_by_cause_ms"].get(k), b["idle_by_cause_ms"].get(k), "ms")
        for k in a["idle_by_cause_ms"]
        if a["idle_by_cause_ms"].get(k) or b["idle_by_cause_ms"].get(k)
    ]
    mem = [
        _row(label, a["memory"].get(k), b["memory"].get(k), "GiB")
        for k, label in (("peak_allocated_gib", "Peak allocated"), ("peak_reserved_gib", "Peak reserved"))
        if a["memory"].get(k) is not None or b["memory"].get(k) is not None
    ]
    fa = {f["cause"]: f for f in a["findings"]}
    fb = {f["cause"]: f for f in b["findings"]}
    # A cause one side could not check is neither gone nor new there (older documents: every rule ran).
    ua = {c for n in a.get("not_checked") or [] for c in n.get("causes", [])}
    ub = {c for n in b.get("not_checked") or [] for c in n.get("causes", [])}
    return m.Compare(
        schema="idlehound/compare",
        schema_version=1,
        a=m.CompareSide(path=a["trace"]["path"], headline=a["headline"]),
        b=m.CompareSide(path=b["trace"]["path"], headline=b["headline"]),
        metrics=rows,
        breakdown_ms=breakdown,
        idle_by_cause_ms=idle,
        kernels_ms=_kernel_rows(a, b),
        memory=mem,
        findings_gone=[_brief(fa[c]) for c in fa if c not in fb and c not in ub],
        findings_new=[_brief(fb[c]) for c in fb if c not in fa and c not in ua],
        findings_unchecked=[_unchecked(fa[c], "A", "B") for c in fa if c in ub]
        + [_unchecked(fb[c], "B", "A") for c in fb if c in ua],
        findings_kept=[
            m.FindingKept(
                cause=c,
                title=fb[c]["title"],
                a_ms=fa[c]["recoverable_ms_per_step"],
                b_ms=fb[c]["recoverable_ms_per_step"],
            )
            for c in fb
            if c in fa
        ],
    )


def _kernel_rows(a: dict[str, Any], b: dict[str, Any]) -> list[m.CompareRow]:
    """The ten kernels with the most time per step on either side."""
    ka = {k["name"]: k["ms_per_step"] for k in a["kernels"]["top"]}
    kb = {k["name"]: k["ms_per_step"] for k in b["kernels"]["top"]}
    names = dict.fromkeys(
        [*ka, *kb]
    )  # A's order, then B's new names: ties keep it (a set's order varied by run)
    return sorted(
        (_row(n, ka.get(n), kb.get(n), "ms") for n in names), key=lambda x: -max(x.a or 0, x.b or 0)
    )[:10]


def _brief(f: dict[str, Any]) -> m.FindingBrief:
    return m.FindingBrief(cause=f["cause"], title=f["title"], ms=f["recoverable_ms_per_step"])


def _unchecked(f: dict[str, Any], side: str, other: str) -> m.FindingUnchecked:
    return m.FindingUnchecked(
        cause=f["cause"], title=f["title"], ms=f["recoverable_ms_per_step"], in_=side, not_checked_in=other
    )
