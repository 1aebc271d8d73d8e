"""Synthetic many-rank runs: per-rank perturbations of a recorded 2-rank DDP job, with one planted straggler.

The source is tests/traces/ranks/ddp_gloo_slow1: a real torch.distributed job (gloo, CPU) recorded by
`idlehound run --nproc 2` in which rank 1 sleeps 30 ms per step (tests/scripts/dist/ddp_train.py:24) and rank 0
waits for it in gloo:all_reduce. Rank N of a synthetic run of n ranks is a copy of the recorded waiter (rank 0),
except the planted straggler, a copy of the recorded rank 1; each copy's times are stretched by its own factor
(1 +- jitter, seeded), its distributedInfo says rank N of n, and its capture sidecar is copied beside it (so the
lines stay exact). Files are written uncompressed: a few hundred KB each.

    python benchmarks/many_ranks.py OUT_DIR --ranks 1024 [--straggler 700] [--seed 0]
"""

from __future__ import annotations

import argparse
import gzip
import random
import shutil
import sys
from pathlib import Path
from typing import Any, Optional

import msgspec

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "traces" / "ranks" / "ddp_gloo_slow1"
JITTER = 0.01  # each rank's times stretched by a factor within 1 +- JITTER


def _recorded(rank: int) -> tuple[dict[str, Any], Optional[Path]]:
    trace = next(SOURCE.glob(f"rank{rank}_*.pt.trace.json.gz"))
    sidecar = trace.with_name(trace.name.replace(".pt.trace.json.gz", ".sidecar.json.gz"))
    return msgspec.json.decode(gzip.decompress(trace.read_bytes())), (sidecar if sidecar.exists() else None)


def _stretched(doc: dict[str, Any], factor: float, rank: int, world: int) -> dict[str, Any]:
    """A copy of doc whose times run `factor` times as long from the first event on."""
    events = doc["traceEvents"]
    t0 = min(e["ts"] for e in events if isinstance(e.get("ts"), (int, float)))
    out = []
    for e in events:
        e = dict(e)
        if isinstance(e.get("ts"), (int, float)):
            e["ts"] = round(t0 + (e["ts"] - t0) * factor, 3)
        if isinstance(e.get("dur"), (int, float)):
            e["dur"] = round(e["dur"] * factor, 3)
        out.append(e)
    info = dict(doc.get("distributedInfo") or {})
    info.update(rank=rank, world_size=world)
    info.pop("pg_config", None)  # the recorded process group lists 2 ranks
    return {**doc, "distributedInfo": info, "traceEvents": out}


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
        doc, sidecar = straggler_doc if rank == straggler else waiter
        stem = f"rank{rank}_synth_{rank}.1"
        factor = 1 + rng.uniform(-JITTER, JITTER)
        (run / f"{stem}.pt.trace.json").write_bytes(msgspec.json.encode(_stretched(doc, factor, rank, n)))
        if sidecar is not None:
            shutil.copyfile(sidecar, run / f"{stem}.sidecar.json.gz")
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
