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

from .errors import IdlehoundError
from .report import ranks_title, render_ranks, render_ranks_html
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


def _set_jobs(n: int) -> None:
    os.environ["IDLEHOUND_JOBS"] = str(n)


def analyze_ranks(path: Union[str, Path], workers: Optional[int] = None) -> dict[str, Any]:
    """The distributed report document (schema idlehound/distributed, version 1)."""
    paths = rank_traces(path)
    if len(paths) < 2:
        raise IdlehoundError(f"{path}: one trace only; a multi-rank comparison needs a trace per rank")
    n = workers or min(len(paths), os.cpu_count() or 1)
    if n > 1:
        share = max(1, (os.cpu_count() or 1) // n)  # cores for each rank's own piece workers
        with ProcessPoolExecutor(max_workers=n, initializer=_set_jobs, initargs=(share,)) as pool:
            docs = list(pool.map(_one, map(str, paths)))
    else:
        docs = [_one(str(p)) for p in paths]
    failed = [d["error"] for d in docs if "error" in d]
    docs = [d for d in docs if "error" not in d]
    if len(docs) < 2:
        raise IdlehoundError(f"{path}: {len(docs)} of {len(paths)} rank traces could be analysed; a comparison "
                             f"needs two ({failed[0]})")
    doc = compare_ranks(docs)
    doc["failed"] = failed
    return doc


def compare_ranks(docs: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [_rank_row(d) for d in docs]
    compute = [r["compute_ms"] for r in rows]
    med = statistics.median(compute)
    slow = max(rows, key=lambda r: r["compute_ms"])
    min_comm = min(r["comm_ms"] for r in rows)
    for r in rows:
        r["wait_ms"] = round(r["comm_ms"] - min_comm, 4)  # time spent waiting for slower ranks
    others = [d for d in docs if d["rank"] != slow["rank"]]
    straggler_doc = next(d for d in docs if d["rank"] == slow["rank"])
    excess = slow["compute_ms"] - statistics.median([r["compute_ms"] for r in rows if r is not slow] or [med])
    is_straggler = excess > max(0.05 * slow["step_ms"], 0.1)
    why = _why(straggler_doc, others) if is_straggler else []
    waiters = [r for r in rows if r["rank"] != slow["rank"]]
    headline = (f"rank {slow['rank']} is the straggler: {slow['compute_ms']:.2f} ms of work per step against "
                f"{statistics.median([r['compute_ms'] for r in waiters]):.2f} ms on the other ranks, which wait "
                f"{statistics.median([r['wait_ms'] for r in waiters]):.2f} ms per step in collectives for it"
                if is_straggler else "no straggler: the ranks do about the same work per step")
    if is_straggler and why:
        headline += f"; the difference is at {why[0]['file']}:{why[0]['line']}"
    return {
        "schema": "idlehound/distributed", "schema_version": 1, "headline": headline,
        "world_size": docs[0].get("world_size") or len(docs), "backend": docs[0].get("backend"),
        "ranks_compared": len(docs),
        "ranks": rows,
        "straggler": ({"rank": slow["rank"], "excess_ms_per_step": round(excess, 4), "why_lines": why,
                       "findings": straggler_doc["findings"], "trace": straggler_doc["trace"]["path"]}
                      if is_straggler else None),
    }


def _rank_row(d: dict[str, Any]) -> dict[str, Any]:
    f = d["rank_figures"]
    step = d["metrics"]["step_ms"]["value"] or 0.0
    return {"rank": d["rank"], "step_ms": step, "gpu_util": d["metrics"]["gpu_util"]["value"],
            "comm_ms": round(f["comm_ms"], 4), "exposed_comm_ms": round(f["exposed_comm_ms"], 4),
            "overlapped_comm_ms": round(f["comm_ms"] - f["exposed_comm_ms"], 4),
            "compute_ms": round(step - f["exposed_comm_ms"], 4), "trace": d["trace"]["path"],
            "top_finding": d["findings"][0]["title"] if d["findings"] else ""}


def _why(slow: dict[str, Any], others: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """User lines where the straggler spends more time per step than the other ranks (median)."""
    mine = {(f, ln): (fn, ms) for f, ln, fn, ms in slow["rank_figures"]["lines"]}
    theirs = [{(f, ln): ms for f, ln, _, ms in o["rank_figures"]["lines"]} for o in others]
    out = []
    for key, (fn, ms) in mine.items():
        base = statistics.median([t.get(key, 0.0) for t in theirs]) if theirs else 0.0
        if ms - base > 0:
            out.append({"file": key[0], "line": key[1], "function": fn, "ms_per_step": round(ms, 4),
                        "others_ms_per_step": round(base, 4), "excess_ms_per_step": round(ms - base, 4)})
    out.sort(key=lambda r: -r["excess_ms_per_step"])
    return out[:5]


__all__ = ["analyze_ranks", "compare_ranks", "rank_traces", "ranks_title", "render_ranks", "render_ranks_html"]
