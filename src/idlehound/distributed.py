"""Several ranks of one torch.distributed job: per-rank figures, the straggler and why, communication waits.

Each rank's trace is analysed in its own process (they are independent), then compared: the straggler is the
rank with the most step time outside communication; the others wait for it inside their collectives.
"""

from __future__ import annotations

import os
import statistics
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Optional, Union

import msgspec

from .analysis import location_text
from .errors import IdlehoundError
from .report import model as m
from .report import ranks_title, render_ranks, render_ranks_html
from .report.model import rnd
from .runfolder import rank_of
from .trace import list_traces


def rank_traces(path: Union[str, Path]) -> list[Path]:
    """The newest trace of each worker in the newest run under path (one per rank)."""
    found = list_traces(Path(path))
    if not found:
        raise IdlehoundError(f"{path}: no traces (*.pt.trace.json[.gz] or rank-N.json[.gz] files)")
    run = max(found, key=lambda t: t.sort_key).run
    newest: dict[str, Any] = {}
    for t in (t for t in found if t.run == run):
        if t.worker not in newest or t.sort_key > newest[t.worker].sort_key:
            newest[t.worker] = t
    return [t.path for t in sorted(newest.values(), key=lambda t: _rank_of(t.worker, 0))]


def _rank_of(worker: str, default: int) -> int:
    rank = rank_of(worker)
    return default if rank is None else rank


def _one(path: str) -> dict[str, Any]:
    """One rank's report document, or {"error": one line, "trace": path}: errors travel back as values, so one
    unreadable rank cannot break the process pool."""
    from .pipeline import analyze_path

    try:
        res = analyze_path(path)
    except IdlehoundError as e:
        return {"error": str(e), "trace": {"path": path}}
    info = res.analysis.trace.metadata.get("distributedInfo") or {}
    doc = res.doc
    doc["rank_figures"] = res.analysis.ranks
    doc["rank"] = info.get("rank", _rank_of(res.analysis.trace.worker, -1))
    doc["world_size"] = info.get("world_size")
    doc["backend"] = info.get("backend")
    return doc


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _fit_memory(n: int, paths: list[Path]) -> int:
    """At most as many ranks at once as the free memory holds: a rank's load peaks near twice its JSON (a gzip
    file's JSON taken as 10x the file)."""
    try:
        info = dict(ln.split(":", 1) for ln in Path("/proc/meminfo").read_text().splitlines())
        free = int(info["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):  # not Linux: no estimate
        return n
    per = max(p.stat().st_size * (10 if p.name.endswith(".gz") else 1) for p in paths) * 2
    return max(1, min(n, free // max(per, 1)))


def _set_jobs(n: int) -> None:
    os.environ["IDLEHOUND_JOBS"] = str(n)


def analyze_ranks(path: Union[str, Path], workers: Optional[int] = None) -> dict[str, Any]:
    """The distributed report document (schema idlehound/distributed, version 1)."""
    paths = rank_traces(path)
    if len(paths) < 2:
        raise IdlehoundError(f"{path}: one trace only; a multi-rank comparison needs a trace per rank")
    cores = _cores()
    n = workers or _fit_memory(min(len(paths), cores), paths)
    if n > 1:
        share = max(1, cores // n)  # cores for each rank's own piece workers
        with ProcessPoolExecutor(max_workers=n, initializer=_set_jobs, initargs=(share,)) as pool:
            docs = list(pool.map(_one, map(str, paths)))
    else:
        docs = [_one(str(p)) for p in paths]
    failed = [d["error"] for d in docs if "error" in d]
    docs = [d for d in docs if "error" not in d]
    if len(docs) < 2:
        raise IdlehoundError(
            f"{path}: {len(docs)} of {len(paths)} rank traces could be analysed; a comparison "
            f"needs two ({failed[0]})"
        )
    doc = compare_ranks(docs)
    doc["failed"] = failed
    return doc


def compare_ranks(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The ranks document (schema idlehound/distributed, version 1) as plain data."""
    return m.as_data(ranks_model(docs))


def ranks_model(docs: list[dict[str, Any]]) -> m.Ranks:
    rows = [_rank_row(d) for d in docs]
    med = statistics.median([r.compute_ms for r in rows])
    slow = max(rows, key=lambda r: r.compute_ms)
    min_comm = min(r.comm_ms for r in rows)
    for r in rows:
        r.wait_ms = rnd(r.comm_ms - min_comm, m.SHARE)  # time spent waiting for slower ranks
    others = [d for d in docs if d["rank"] != slow.rank]
    straggler_doc = next(d for d in docs if d["rank"] == slow.rank)
    excess = slow.compute_ms - statistics.median([r.compute_ms for r in rows if r is not slow] or [med])
    is_straggler = excess > max(0.05 * slow.step_ms, 0.1)
    why = _why(straggler_doc, others) if is_straggler else []
    waiters = [r for r in rows if r.rank != slow.rank]
    headline = (
        f"rank {slow.rank} is the straggler: {slow.compute_ms:.2f} ms of work per step against "
        f"{statistics.median([r.compute_ms for r in waiters]):.2f} ms on the other ranks, which wait "
        f"{statistics.median([r.wait_ms for r in waiters]):.2f} ms per step in collectives for it"
        if is_straggler
        else "no straggler: the ranks do about the same work per step"
    )
    if is_straggler and why:
        headline += f"; the difference is at {location_text({'file': why[0].file, 'line': why[0].line}, approx=False)}"
    straggler = None
    if is_straggler:
        straggler = m.Straggler(
            rank=slow.rank,
            excess_ms_per_step=rnd(excess, m.SHARE),
            why_lines=why,
            findings=[msgspec.convert(f, m.Finding) for f in straggler_doc["findings"]],
            trace=straggler_doc["trace"]["path"],
        )
    return m.Ranks(
        schema="idlehound/distributed",
        schema_version=1,
        headline=headline,
        world_size=docs[0].get("world_size") or len(docs),
        backend=docs[0].get("backend"),
        ranks_compared=len(docs),
        ranks=rows,
        straggler=straggler,
    )


def _rank_row(d: dict[str, Any]) -> m.RankRow:
    f = d["rank_figures"]
    step = d["metrics"]["step_ms"]["value"] or 0.0
    return m.RankRow(
        rank=d["rank"],
        step_ms=step,
        gpu_util=d["metrics"]["gpu_util"]["value"],
        comm_ms=rnd(f["comm_ms"], m.SHARE),
        exposed_comm_ms=rnd(f["exposed_comm_ms"], m.SHARE),
        overlapped_comm_ms=rnd(f["comm_ms"] - f["exposed_comm_ms"], m.SHARE),
        compute_ms=rnd(step - f["exposed_comm_ms"], m.SHARE),
        trace=d["trace"]["path"],
        top_finding=d["findings"][0]["title"] if d["findings"] else "",
    )


def _why(slow: dict[str, Any], others: list[dict[str, Any]]) -> list[m.WhyLine]:
    """User lines where the straggler spends more time per step than the other ranks (median)."""
    mine = {(f, ln): (fn, ms) for f, ln, fn, ms in slow["rank_figures"]["lines"]}
    theirs = [{(f, ln): ms for f, ln, _, ms in o["rank_figures"]["lines"]} for o in others]
    out = []
    for key, (fn, ms) in mine.items():
        base = statistics.median([t.get(key, 0.0) for t in theirs]) if theirs else 0.0
        if ms - base > 0:
            out.append(
                m.WhyLine(
                    file=key[0],
                    line=key[1],
                    function=fn,
                    ms_per_step=rnd(ms, m.SHARE),
                    others_ms_per_step=rnd(base, m.SHARE),
                    excess_ms_per_step=rnd(ms - base, m.SHARE),
                )
            )
    out.sort(key=lambda r: -r.excess_ms_per_step)
    return out[:5]


__all__ = [
    "analyze_ranks",
    "compare_ranks",
    "rank_traces",
    "ranks_title",
    "render_ranks",
    "render_ranks_html",
]
