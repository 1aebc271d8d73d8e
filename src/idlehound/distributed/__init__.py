"""Several ranks of one torch.distributed job: per-rank figures, the straggler and why, communication waits.

Each rank's trace is analysed on its own (they are independent) into a summary of a few KB, by processes of this
machine (engine "local", the default) or by Ray tasks where the files are (engine "ray", the `ray` extra:
distributed/_ray.py); the summaries are then compared: the straggler is the rank with the most step time outside
communication; the others wait for it inside their collectives.
"""

from __future__ import annotations

import gc
import os
import statistics
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Optional, Union

import msgspec
import numpy as np

from .. import settings
from ..analysis import location_text, roles
from ..errors import IdlehoundError
from ..report import model as m
from ..report.model import rnd
from ..runfolder import rank_of
from ..trace import list_traces

Entry = tuple[str, str, str, tuple[Any, ...]]  # (trace path, run, worker, sort key): plain data for Ray


def rank_traces(path: Union[str, Path]) -> list[Path]:
    """The newest trace of each worker in the newest run under path (one per rank)."""
    return [Path(e[0]) for e in newest_per_worker(list_entries(path), path)]


def list_entries(path: Union[str, Path]) -> list[Entry]:
    """(path, run, worker, sort key) of every trace under path: plain data, so a listing task on another node
    can send it back (the Ray engine runs this on every node)."""
    return [(str(t.path), t.run, t.worker, t.sort_key) for t in list_traces(Path(path))]


def newest_per_worker(found: list[Entry], path: Union[str, Path]) -> list[Entry]:
    """The entries of the newest run's newest trace per worker, in rank order."""
    if not found:
        raise IdlehoundError(f"{path}: no traces (*.pt.trace.json[.gz] or rank-N.json[.gz] files)")
    run = max(found, key=lambda t: t[3])[1]
    newest: dict[str, Entry] = {}
    for t in (t for t in found if t[1] == run):
        if t[2] not in newest or t[3] > newest[t[2]][3]:
            newest[t[2]] = t
    return sorted(newest.values(), key=lambda t: (_rank_of(t[2], 0), t[0]))


def _rank_of(worker: str, default: int) -> int:
    rank = rank_of(worker)
    return default if rank is None else rank


def _one(path: str) -> dict[str, Any]:
    """One rank's summary (rank_summary), or {"error": one line, "trace": path}: errors travel back as values,
    so one unreadable rank cannot break the process pool."""
    try:
        return rank_summary(path)
    except IdlehoundError as e:
        return {"error": str(e), "trace": {"path": path}}


def rank_summary(path: str) -> dict[str, Any]:
    """What the comparison needs from one rank, never its event table: step times, GPU busy share, time in
    collectives (all and by name), time per user line, the top findings. The table and the analysis are freed
    before this returns, so a worker holds one rank's table at a time and ships a few KB."""
    from ..pipeline import analyze_path

    res = analyze_path(path)
    a = res.analysis
    info = a.trace.metadata.get("distributedInfo") or {}
    out = {
        "rank": info.get("rank", _rank_of(a.trace.worker, -1)),
        "world_size": info.get("world_size"),
        "backend": info.get("backend"),
        "trace": {"path": res.doc["trace"]["path"]},
        "metrics": {k: {"value": res.doc["metrics"][k]["value"]} for k in ("step_ms", "gpu_util")},
        "findings": res.doc["findings"][:TOP_FINDINGS],
        "rank_figures": _plain_figures(a.ranks) | {"collectives": _collectives(a)},
        "steps_ms": [rnd(s.duration_ns / 1e6, m.SHARE) for s in a.steps],
    }
    del res, a
    gc.collect()  # the table's arrays go now, not when the next rank's table is already loaded
    return out


TOP_FINDINGS = 3  # a straggler's findings shown; the rank's own report has them all


def _plain_figures(f: dict[str, Any]) -> dict[str, Any]:
    """The rank figures as plain Python numbers: what any engine can ship and any encoder can write."""
    return {
        "comm_ms": float(f["comm_ms"]),
        "exposed_comm_ms": float(f["exposed_comm_ms"]),
        "lines": [(str(fi), int(ln), str(fn), float(ms)) for fi, ln, fn, ms in f["lines"]],
    }


def _collectives(a: Any) -> dict[str, float]:
    """Milliseconds per step inside each collective (host op or GPU kernel, by name) within the steps."""
    ev = a.trace.events
    if not a.steps or not len(ev):
        return {}
    ids = np.union1d(ev.name_ids(roles.is_comm_kernel), ev.name_ids(roles.is_comm_op))
    start, end = a.steps[0].start_ns, a.steps[-1].end_ns
    sel = np.flatnonzero(np.isin(ev.name, ids) & (ev.ts >= start) & (ev.ts < end) & (ev.dur > 0))
    out: dict[str, float] = {}
    for i in sel:
        name = ev.name_of(int(i))
        out[name] = out.get(name, 0.0) + float(ev.dur[i])
    return {k: v / len(a.steps) / 1e6 for k, v in sorted(out.items())}


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
    os.environ[settings.JOBS.name] = str(n)


ENGINES = ("local", "ray")


def analyze_ranks(
    path: Union[str, Path],
    workers: Optional[int] = None,
    engine: str = "local",
    address: Optional[str] = None,
    top_k: int = 10,
) -> dict[str, Any]:
    """The distributed report document (schema idlehound/distributed, version 1) as plain data (ranks_report's)."""
    return m.as_data(ranks_report(path, workers, engine, address, top_k))


def ranks_report(
    path: Union[str, Path],
    workers: Optional[int] = None,
    engine: str = "local",
    address: Optional[str] = None,
    top_k: int = 10,
) -> m.Ranks:
    """The distributed report document (schema idlehound/distributed, version 1), what report.write takes.

    engine "local" analyses the ranks in processes of this machine; "ray" in Ray tasks where the files are
    (summaries_on_ray; address: the cluster's, else RAY_ADDRESS or a new local Ray). Both give the same
    document. top_k: the stragglers listed in full."""
    if engine not in ENGINES:
        raise IdlehoundError(f"--engine {engine}: not one of {', '.join(ENGINES)}")
    if engine == "ray":
        from ._ray import summaries_on_ray  # Ray and its engine only when asked for

        docs = summaries_on_ray(path, address)
    else:
        docs = _summaries_local(path, workers)
    return compare_summaries(docs, path, top_k)


def _summaries_local(path: Union[str, Path], workers: Optional[int]) -> list[dict[str, Any]]:
    paths = rank_traces(path)
    if len(paths) < 2:
        raise IdlehoundError(f"{path}: one trace only; a multi-rank comparison needs a trace per rank")
    cores = _cores()
    n = workers or _fit_memory(min(len(paths), cores), paths)
    if n > 1:
        share = max(1, cores // n)  # cores for each rank's own piece workers
        with ProcessPoolExecutor(max_workers=n, initializer=_set_jobs, initargs=(share,)) as pool:
            return list(pool.map(_one, map(str, paths), chunksize=max(1, len(paths) // (n * 8))))
    return [_one(str(p)) for p in paths]


def compare_summaries(docs: list[dict[str, Any]], path: Union[str, Path], top_k: int = 10) -> m.Ranks:
    """The ranks document from every rank's summary (or error), in whatever order they came."""
    failed = sorted(d["error"] for d in docs if "error" in d)
    docs = sorted((d for d in docs if "error" not in d), key=lambda d: (str(d["rank"]), d["trace"]["path"]))
    docs.sort(key=lambda d: d["rank"] if isinstance(d["rank"], int) else -1)
    if len(docs) < 2:
        raise IdlehoundError(
            f"{path}: {len(docs)} of {len(docs) + len(failed)} rank traces could be analysed; a comparison "
            f"needs two ({failed[0] if failed else 'one trace only'})"
        )
    doc = ranks_model(docs, top_k)
    doc.failed = failed
    return doc


def compare_ranks(docs: list[dict[str, Any]], top_k: int = 10) -> dict[str, Any]:
    """The ranks document (schema idlehound/distributed, version 1) as plain data."""
    return m.as_data(ranks_model(docs, top_k))


def ranks_model(docs: list[dict[str, Any]], top_k: int = 10) -> m.Ranks:
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
        step_ms_histogram=histogram([r.step_ms for r in rows]),
        idle_pct_histogram=histogram([100 - r.gpu_util for r in rows if r.gpu_util is not None]),
        stragglers=_stragglers(rows, docs, top_k),
        collectives=_collective_waits(docs, top_k),
    )


HIST_BINS = 20


def histogram(values: list[float], bins: int = HIST_BINS) -> Optional[m.Histogram]:
    """Counts of values in equal bins from the least to the largest (None for no values)."""
    if not values:
        return None
    lo, hi = min(values), max(values)
    counts, edges = np.histogram(
        values, bins=bins if hi > lo else 1, range=(lo, hi if hi > lo else lo + 1e-9)
    )
    return m.Histogram(edges=[rnd(float(e), m.SHARE) for e in edges], counts=[int(c) for c in counts])


def _stragglers(rows: list[m.RankRow], docs: list[dict[str, Any]], k: int) -> list[m.StragglerRow]:
    """The k ranks with the most work per step, each with its excess over the median rank and the user line
    where it spends the most time above the other ranks' median."""
    med = statistics.median([r.compute_ms for r in rows])
    order = sorted(range(len(rows)), key=lambda i: (-rows[i].compute_ms, i))[:k]
    lines = _line_matrix(docs)
    out = []
    for i in order:
        r = rows[i]
        out.append(
            m.StragglerRow(
                rank=r.rank,
                step_ms=r.step_ms,
                compute_ms=r.compute_ms,
                excess_ms_per_step=rnd(r.compute_ms - med, m.SHARE),
                top_finding=r.top_finding,
                trace=r.trace,
                why=_top_line(lines, i),
            )
        )
    return out


def _line_matrix(docs: list[dict[str, Any]]) -> tuple[list[tuple[str, int, str]], np.ndarray]:
    """Every user line of any rank and a (lines x ranks) array of its ms per step (0 where a rank has none)."""
    keys: dict[tuple[str, int], int] = {}
    names: list[tuple[str, int, str]] = []
    cells: list[tuple[int, int, float]] = []
    for j, d in enumerate(docs):
        for f, ln, fn, ms in d["rank_figures"]["lines"]:
            if (f, ln) not in keys:
                keys[(f, ln)] = len(names)
                names.append((f, ln, fn))
            cells.append((keys[(f, ln)], j, ms))
    mat = np.zeros((len(names), len(docs)))
    for i, j, ms in cells:
        mat[i, j] = ms
    return names, mat


def _top_line(lines: tuple[list[tuple[str, int, str]], np.ndarray], j: int) -> Optional[m.WhyLine]:
    names, mat = lines
    if not names or mat.shape[1] < 2:
        return None
    base = np.median(np.delete(mat, j, axis=1), axis=1)
    excess = mat[:, j] - base
    i = int(np.argmax(excess))
    if excess[i] <= 0:
        return None
    f, ln, fn = names[i]
    return m.WhyLine(
        file=f,
        line=ln,
        function=fn,
        ms_per_step=rnd(float(mat[i, j]), m.SHARE),
        others_ms_per_step=rnd(float(base[i]), m.SHARE),
        excess_ms_per_step=rnd(float(excess[i]), m.SHARE),
    )


def _collective_waits(docs: list[dict[str, Any]], k: int) -> list[m.CollectiveWait]:
    """Per collective (by name): how long the ranks spend in it and how much of that is waiting for the rank
    that arrives last (its time is the least); the k with the most waiting first."""
    by_name: dict[str, list[float]] = {}
    for d in docs:
        for name, ms in d["rank_figures"].get("collectives", {}).items():
            by_name.setdefault(name, []).append(ms)
    out = []
    for name, vals in by_name.items():
        least = min(vals)
        out.append(
            m.CollectiveWait(
                name=name,
                ranks=len(vals),
                median_ms_per_step=rnd(statistics.median(vals), m.SHARE),
                max_ms_per_step=rnd(max(vals), m.SHARE),
                wait_ms_per_step=rnd(statistics.median([v - least for v in vals]), m.SHARE),
                min_ms_per_step=rnd(least, m.SHARE),
            )
        )
    out.sort(key=lambda c: (-c.wait_ms_per_step, c.name))
    return out[:k]


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
        steps_ms=list(d.get("steps_ms", [])),
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
    "ranks_report",
]
