"""Scaling of `analyze --ranks`: the local process pool against Ray, on synthetic runs of 2 to 1,024 ranks.

For each rank count: a synthetic run (benchmarks/many_ranks.py: perturbed copies of a recorded 2-rank DDP job, one
planted straggler), then the end-to-end analysis by each engine, timed; whether the planted straggler is the one
named; whether both engines wrote the same JSON and HTML. Ray runs on a local Ray instance started once (its start
is printed apart) or on the cluster at --address. Then the peak memory of a Ray task: the growth of its worker's
resident set (VmHWM after the task, reset before it, minus VmRSS before it) over the largest rank file, the measure
of issue 35's target (docs/measurements/ranks-scaling.md says why), and its peak live heap beside it.

    python benchmarks/bench_ranks_scaling.py [--ranks 2,8,64,256,1024] [--out /tmp/idlehound-ranks]
        [--address ADDR | --nodes N]

A comparison needs two ranks, so the smallest scale is 2 (1 rank is `idlehound analyze`). Load average printed:
this benchmark shares its cores with whatever else runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from many_ranks import generate  # noqa: E402

from idlehound.distributed import _cores, analyze_ranks, rank_summary  # noqa: E402
from idlehound.report import render_ranks_html  # noqa: E402
from idlehound.report.model import encode  # noqa: E402


def _timed(fn: Any, *a: Any, **kw: Any) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn(*a, **kw)
    return out, time.perf_counter() - t


def _load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def measured_summary(path: str, warm: str) -> dict[str, int]:
    """In a Ray worker: the rank's summary, and how far the worker's resident set rose above where it began.

    A summary of another rank (warm, the smallest file) first, so that imports and first-use caches are not
    counted, as for every task after a worker's first; not of the same file, whose freed memory the allocator
    would hand back exactly."""
    os.environ["IDLEHOUND_JOBS"] = "1"
    rank_summary(warm)
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    before, anon = _status("VmRSS"), _status("RssAnon")
    rank_summary(path)
    peak = _status("VmHWM")
    tracemalloc.start()
    rank_summary(path)
    heap = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {
        "rss_before": before,
        "anon_before": anon,
        "peak": peak,
        "heap": heap,
        "file": os.path.getsize(path),
    }


def _status(key: str) -> int:
    for ln in Path("/proc/self/status").read_text().splitlines():
        if ln.startswith(key + ":"):
            return int(ln.split()[1]) * 1024
    raise KeyError(key)


def _memory(ray: Any, run: Path, samples: int) -> None:
    every = sorted(run.glob("*.pt.trace.json"), key=lambda p: -p.stat().st_size)
    task = ray.remote(num_cpus=1)(measured_summary)
    got = ray.get([task.remote(str(p), str(every[-1])) for p in every[:samples]])
    worst = max(got, key=lambda g: g["peak"] - g["rss_before"])
    largest = max(p.stat().st_size for p in run.glob("*.pt.trace.json"))
    grow = worst["peak"] - worst["rss_before"]
    heap = max(g["heap"] for g in got)
    print(
        f"memory: largest rank file {largest / 2**20:.2f} MB; a Ray task's peak growth of its worker's resident "
        f"set (file pages included) {grow / 2**20:.2f} MB = {grow / largest:.2f}x the file (worst of {len(got)} "
        f"tasks, worker at {worst['rss_before'] / 2**20:.0f} MB before it; issue 35's target: <= 1x); its peak "
        f"Python/numpy heap (tracemalloc: live objects, freed memory the worker reuses included) "
        f"{heap / 2**20:.2f} MB = {heap / largest:.2f}x"
    )


def _cluster(nodes: int) -> Any:
    """A local Ray cluster of `nodes` node processes sharing this machine's cores."""
    from ray.cluster_utils import Cluster

    per = max(1, _cores() // nodes)
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": per})
    for _ in range(nodes - 1):
        c.add_node(num_cpus=per)
    c.wait_for_nodes()
    return c


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="2,8,64,256,1024")
    ap.add_argument("--out", type=Path, default=Path("/tmp/idlehound-ranks"))
    ap.add_argument("--address", default=None, help="a Ray cluster (default: start a local Ray instance)")
    ap.add_argument("--nodes", type=int, default=1, help="Ray: a local cluster of this many node processes")
    ap.add_argument("--engines", default="local,ray")
    ap.add_argument("--memory-samples", type=int, default=8)
    a = ap.parse_args(argv)
    engines = a.engines.split(",")
    print(f"cores {_cores()}, {_load()}")
    ray = cluster = None
    if "ray" in engines:
        import ray

        cluster, up = _timed(_cluster, a.nodes) if a.nodes > 1 and not a.address else (None, 0.0)
        if cluster is not None:
            print(f"a local Ray cluster of {a.nodes} node processes started in {up:.1f} s")
        address = a.address or (cluster.address if cluster is not None else None)
        _, start = _timed(ray.init, address=address, logging_level="ERROR", log_to_driver=False)
        print(
            f"ray {ray.__version__}: connected in {start:.1f} s; {ray.cluster_resources().get('CPU', 0):.0f} CPUs"
        )
    print("ranks  generate_s  " + "  ".join(f"{e}_s" for e in engines) + "  ray/local  straggler  same")
    run = None
    for n in [int(x) for x in a.ranks.split(",")]:
        (run, planted), gen = _timed(generate, a.out, n)
        docs, secs = {}, {}
        for e in engines:
            docs[e], secs[e] = _timed(analyze_ranks, run, engine=e)
        found = all((d["straggler"] or {}).get("rank") == planted for d in docs.values())
        same = (
            len({encode(d) for d in docs.values()}) == 1
            and len({render_ranks_html(d) for d in docs.values()}) == 1
        )
        ratio = f"{secs['ray'] / secs['local']:.2f}" if {"ray", "local"} <= set(docs) else "-"
        print(
            f"{n:5d}  {gen:10.1f}  "
            + "  ".join(f"{secs[e]:{len(e) + 2}.1f}" for e in engines)
            + f"  {ratio:>9}  {'found' if found else 'MISSED'} ({planted})  {'yes' if same else 'NO'}  {_load()}"
        )
    if ray is not None and run is not None:
        _memory(ray, run, a.memory_samples)
        ray.shutdown()
    if cluster is not None:
        cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
