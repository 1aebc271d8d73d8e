"""Synthetic many-rank runs: per-rank perturbations of a recorded 2-rank DDP job, with one planted straggler.

The source is tests/traces/ranks/ddp_gloo_slow1: a real torch.distributed job (gloo, CPU) recorded by
`idlehound run --nproc 2` in which rank 1 sleeps 30 ms per step (tests/scripts/dist/ddp_train.py:24) and rank 0
waits for it in gloo:all_reduce. Rank N of a synthetic run of n ranks is a copy of the recorded waiter (rank 0),
except the planted straggler, a copy of the recorded rank 1; each copy's times are stretched by its own factor
(1 +- jitter, seeded), its distributedInfo says rank N of n, and its capture sidecar is written beside it
with the same stretch (so the lines stay exact). Files are written uncompressed: a few hundred KB each.

    python benchmarks/many_ranks.py OUT_DIR --ranks 1024 [--straggler 700] [--seed 0]
"""

from __future__ import annotations

import argparse
import gzip
import math
import random
import shutil
import sys
from pathlib import Path
from typing import Any, Optional

import msgspec

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "traces" / "ranks" / "ddp_gloo_slow1"
JITTER = 0.01  # each rank's times stretched by a factor within 1 +- JITTER


def _recorded(rank: int) -> tuple[dict[str, Any], Optional[dict[str, Any]]]:
    trace = next(SOURCE.glob(f"rank{rank}_*.pt.trace.json.gz"))
    sidecar = trace.with_name(trace.name.replace(".pt.trace.json.gz", ".sidecar.json.gz"))
    side = msgspec.json.decode(gzip.decompress(sidecar.read_bytes())) if sidecar.exists() else None
    return msgspec.json.decode(gzip.decompress(trace.read_bytes())), side


def _ns(us: float) -> int:
    """µs -> integer ns exactly as idlehound's table does (trace/_table.py _us_to_ns)."""
    whole = math.floor(us)
    return whole * 1000 + round((us - whole) * 1000)


def _stretched(doc: dict[str, Any], factor: float, rank: int, world: int) -> tuple[dict[str, Any], Any]:
    """A copy of doc whose times run `factor` times as long from the first event on, and the same stretch for
    the sidecar's absolute ns times. Times are stretched as integer ns, so that a sidecar entry still names its
    event's start to the nanosecond (the analysis matches them exactly)."""
    events = doc["traceEvents"]
    n0 = min(_ns(e["ts"]) for e in events if isinstance(e.get("ts"), (int, float)))

    def rel(ns: int) -> int:
        return n0 + round((ns - n0) * factor)

    out = []
    for e in events:
        e = dict(e)
        if isinstance(e.get("ts"), (int, float)):
            ns = rel(_ns(e["ts"]))
            e["ts"] = ns // 1000 + (ns % 1000) / 1000
        if isinstance(e.get("dur"), (int, float)):
            e["dur"] = round(e["dur"] * factor, 3)
        out.append(e)
    info = dict(doc.get("distributedInfo") or {})
    info.update(rank=rank, world_size=world)
    info.pop("pg_config", None)  # the recorded process group lists 2 ranks
    base = int(doc.get("baseTimeNanoseconds") or 0)
    return {**doc, "distributedInfo": info, "traceEvents": out}, lambda ns: base + rel(ns - base)


def _sidecar(side: dict[str, Any], absolute: Any) -> bytes:
    """The sidecar with its absolute ns times stretched as the trace's."""
    side = dict(side)
    for key in ("frames", "library_calls"):
        side[key] = [[absolute(r[0]), *r[1:]] for r in side.get(key) or []]
    side["points"] = [[absolute(r[0]), absolute(r[1]), *r[2:]] for r in side.get("points") or []]
    return gzip.compress(msgspec.json.encode(side), 1)


def generate(out: Path, n: int, straggler: Optional[int] = None, seed: int = 0) -> tuple[Path, int]:
    """Write a run folder of n rank traces under out; (the folder, the planted straggler's rank)."""
    if straggler is None:
        straggler = (2 * n) // 3
    if not 0 <= straggler < n:
        raise ValueError(f"straggler {straggler} is not a rank of {n}")
    run = out / f"synthetic-{n}"
    if run.exists():
        shutil.rmtree(run)
    run.mkdir(parents=True)
    rng = random.Random(seed)
    waiter, straggler_doc = _recorded(0), _recorded(1)
    for rank in range(n):
        doc, side = straggler_doc if rank == straggler else waiter
        stem = f"rank{rank}_synth_{rank}.1"
        factor = 1 + rng.uniform(-JITTER, JITTER)
        trace, absolute = _stretched(doc, factor, rank, n)
        (run / f"{stem}.pt.trace.json").write_bytes(msgspec.json.encode(trace))
        if side is not None:
            (run / f"{stem}.sidecar.json.gz").write_bytes(_sidecar(side, absolute))
    return run, straggler


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--straggler", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    run, s = generate(a.out, a.ranks, a.straggler, a.seed)
    size = sum(p.stat().st_size for p in run.iterdir())
    print(f"{run}: {a.ranks} ranks, straggler rank {s}, {size / 2**20:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
