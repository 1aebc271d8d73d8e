"""Throughput of real training loops plain vs under `idlehound run`, outside and inside the window.

    python benchmarks/bench_overhead.py [--reps 3] [--kinds resnet,small] [--steps N] [--out FILE.json]

Outside: samples/s of the steps after the profiled window, plain vs idlehound (target: <= 3% slower).
Never: idlehound with a window that is never reached (its step hook, step timing and sampler alone), which
separates the cost of idlehound's bookkeeping from what the profiler leaves behind once stopped.
Inside: idlehound's own profiled vs unprofiled step time from run.json (the observer effect).
Each repetition runs plain, idlehound and never one after the other, each in a fresh process; medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _bench(cmd: list[str], what: str) -> dict:
    t0 = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("BENCH "))
    r = json.loads(line[6:])
    print(f"# {what}: {r['samples_per_s']:.1f} samples/s ({time.monotonic() - t0:.1f} s)", flush=True)
    return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--steps", type=int, default=0, help="steps per run (default: resnet 400, small 4000)")
    ap.add_argument("--out", default="", help="also write the rows as JSON here")
    ap.add_argument("--kinds", default="resnet,small")
    args = ap.parse_args()
    measure_from = 60
    workload = str(HERE / "overhead_workload.py")
    rows = []
    for kind in args.kinds.split(","):
        steps = str(args.steps or {"small": 4000}.get(kind, 400))
        plain, under, never, inside = [], [], [], []
        for _ in range(args.reps):
            plain.append(
                _bench([sys.executable, workload, kind, steps, str(measure_from)], f"{kind} plain")[
                    "samples_per_s"
                ]
            )
            for skip, out, what in (("20", under, "idlehound"), ("1000000", never, "never profiled")):
                with tempfile.TemporaryDirectory() as logdir:
                    cmd = [
                        sys.executable,
                        "-m",
                        "idlehound",
                        "run",
                        "--logdir",
                        logdir,
                        "--skip",
                        skip,
                        "--warmup",
                        "2",
                        "--active",
                        "3",
                        "--no-report",
                        workload,
                        kind,
                        steps,
                        str(measure_from),
                    ]
                    out.append(_bench(cmd, f"{kind} {what}")["samples_per_s"])
                    run = json.loads(next(Path(logdir).glob("*/run.json")).read_text())
                    if out is under and run.get("profiler_overhead"):
                        inside.append(run["profiler_overhead"])
        p, u, n = (statistics.median(v) for v in (plain, under, never))
        rows.append(
            {
                "workload": kind,
                "steps": int(steps),
                "plain_samples_per_s": round(p, 1),
                "idlehound_samples_per_s": round(u, 1),
                "never_profiled_samples_per_s": round(n, 1),
                "outside_window_slowdown_pct": round(100 * (p - u) / p, 2),
                "never_profiled_slowdown_pct": round(100 * (p - n) / p, 2),
                "inside_window_step_ratio": round(statistics.median(inside), 3) if inside else None,
                "plain_runs": [round(v, 1) for v in plain],
                "idlehound_runs": [round(v, 1) for v in under],
                "never_runs": [round(v, 1) for v in never],
            }
        )
    print(json.dumps(rows, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2))
    print(
        f"{'workload':10} {'plain/s':>10} {'idlehound/s':>12} {'outside %':>10} {'never %':>8} {'inside x':>9}"
    )
    for r in rows:
        print(
            f"{r['workload']:10} {r['plain_samples_per_s']:10.1f} {r['idlehound_samples_per_s']:12.1f} "
            f"{r['outside_window_slowdown_pct']:10.2f} {r['never_profiled_slowdown_pct']:8.2f} "
            f"{str(r['inside_window_step_ratio']):>9}"
        )


if __name__ == "__main__":
    main()
