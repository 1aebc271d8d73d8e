"""A/B on one machine: analyze_path on a 1 GB trace in 4 KB pages (as shipped) against numpy's default huge
pages, alternated, 3 rounds each in fresh processes; and the C decoder alone over the trace's pieces.

    python3 benchmarks/device_pages.py OUTDIR
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

CHILD = r"""
import contextlib, resource, sys, time
t0 = time.perf_counter()
from idlehound import pipeline
if sys.argv[2] == "huge":
    pipeline.small_pages = contextlib.nullcontext
r = pipeline.analyze_path(sys.argv[1])
ru = resource.getrusage(resource.RUSAGE_SELF)
print(f"{time.perf_counter() - t0:.3f} {ru.ru_utime:.2f} {ru.ru_stime:.2f} {ru.ru_minflt} {ru.ru_maxrss // 1024}")
"""

DECODE = r"""
import sys, time
from idlehound.trace import _native, _parallel
buf = open(sys.argv[1], "rb").read()
mv = memoryview(buf)
lo = buf.find(b"[", buf.find(b'"traceEvents"')) + 1
hi = buf.rfind(b"]")
pieces = list(_parallel._pieces(mv, lo, hi))
for _ in range(2):
    d = _native.Decoder()
    t = time.perf_counter()
    for a, b in pieces:
        d.decode(mv, a, b)
    print(f"C decode alone: {time.perf_counter() - t:.3f} s for {len(pieces)} pieces")
"""


def main() -> None:
    import bench_analyze as b

    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    env["IDLEHOUND_JOBS"] = os.environ.get("PAGES_JOBS", "1")
    with tempfile.TemporaryDirectory(dir=os.environ.get("SPEED_TMP")) as tmp:
        path = Path(tmp) / "bench.pt.trace.json"
        b.build(ROOT / "tests" / "traces" / "demo", int(os.environ.get("SPEED_MB", "1000")), path)
        print(
            subprocess.run(
                [sys.executable, "-c", DECODE, str(path)], env=env, capture_output=True, text=True
            ).stdout
        )
        rows = []
        for rnd in range(int(os.environ.get("PAGES_ROUNDS", "3"))):
            for mode in ("small", "huge") if rnd % 2 == 0 else ("huge", "small"):
                t = time.time()
                p = subprocess.run(
                    [sys.executable, "-c", CHILD, str(path), mode], env=env, capture_output=True, text=True
                )
                line = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr[-300:]
                rows.append(
                    f"round {rnd} {mode:5} wall/user/sys/minflt/maxrssMB: {line}  ({time.time() - t:.1f} s)"
                )
                print(rows[-1], flush=True)
    (out / "pages.txt").write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
