"""Peak memory of a whole analysis on hostile trace shapes, over the uncompressed input size.

    python benchmarks/bench_memory.py [--mb 100] [--cases tiny,varied,...] [--gzip] [--jobs N]

Writes each shape at about --mb MiB of JSON (streamed to a temporary file), then analyses it in a fresh
process as `idlehound analyze` does (load, analyse, diagnose, report document) and prints the process's peak
RSS net of the interpreter and imports (VmHWM, reset after imports), over the JSON size, and the largest peak
of a worker process (large files are decoded on several cores; RUSAGE_CHILDREN). Target (issue 14): <= 2x.

Shapes:
  tiny        the smallest Kineto event repeated (one op name, one thread, back to back)
  varied      tiny events with 1,000 op names, 64 threads, varied durations and gaps (no two spans touch)
  ids         cpu_ops with External ids and kernels with correlation ids (every id column in use)
  python      python_function frames, 24 deep, with Python id / parent id (a with_stack trace)
  long        names of 100 kB each
  nested      every event carries args nested 60 deep (the limit is 64)
  real        the recorded demo trace repeated, times and ids shifted
  names       distinct names of 15 kB (under the C decoder's 16 kB), four events each
  inputs      a distinct input-type list on every cpu_op (record_shapes)

--bomb also times the refusal of a 5 MB gzip bomb (target: under 2 s, under 100 MB written).
--paths both measures each shape with the C decoder and with the msgspec path (IDLEHOUND_NATIVE=0), which must
give the same verdict (loaded or refused) and stay within 2x alike.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import resource, sys
import idlehound.pipeline, idlehound.report.terminal
from idlehound.errors import IdlehoundError

def status(key):  # kB -> bytes
    return next(int(x.split()[1]) * 1024 for x in open("/proc/self/status") if x.startswith(key))

base = status("VmRSS:")
open("/proc/self/clear_refs", "w").write("5")  # reset the peak (VmHWM) to the current RSS
try:
    r = idlehound.pipeline.analyze_path(sys.argv[1])
    outcome = f"analysed, {len(r.analysis.trace.events)} events"
except IdlehoundError as e:
    outcome = "error: " + str(e)[-90:]
kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print("RESULT", base, status("VmHWM:"), kids, outcome)
"""


def _ev(ph="X", cat="cpu_op", name="a", pid=1, tid=1, ts=0, dur=1, args=None) -> str:
    a = "" if args is None else ',"args":' + args
    return f'{{"ph":"{ph}","cat":"{cat}","name":"{name}","pid":{pid},"tid":{tid},"ts":{ts},"dur":{dur}{a}}}'


def tiny(size: int) -> Iterator[str]:
    for i in range(size // 70):
        yield _ev(ts=i)


def varied(size: int) -> Iterator[str]:
    for i in range(size // 80):
        yield _ev(name=f"op{i % 1000}", tid=1 + i % 64, ts=3 * i, dur=1 + i % 2)


def ids(size: int) -> Iterator[str]:
    yield _ev(name="ProfilerStep#1", ts=0, dur=10**9)
    for i in range(size // 380):
        t = 10 + 4 * i
        yield _ev(name=f"aten::op{i % 100}", ts=t, dur=2, args=f'{{"External id":{i}}}')
        yield _ev(
            cat="cuda_runtime",
            name="cudaLaunchKernel",
            ts=t + 1,
            dur=1,
            args=f'{{"External id":{i},"correlation":{i}}}',
        )
        yield _ev(
            cat="kernel",
            name=f"k{i % 50}",
            pid=0,
            tid=7,
            ts=t + 2,
            dur=1,
            args=f'{{"External id":{i},"correlation":{i},"device":0,"stream":7}}',
        )


def python(size: int) -> Iterator[str]:
    depth, i, t = 24, 0, 0
    yield _ev(name="ProfilerStep#1", ts=0, dur=10**9)
    while i * 150 < size:
        for d in range(depth):  # a stack of frames, each inside its parent
            yield _ev(
                cat="python_function",
                name=f"train.py({10 + d}): f{d}",
                ts=t + d,
                dur=2 * (depth - d),
                args=f'{{"Python id":{i + d},"Python parent id":{i + d - 1 if d else -1}}}',
            )
        yield _ev(name="aten::add", ts=t + depth, dur=1)
        i += depth
        t += 2 * depth + 1


def long(size: int) -> Iterator[str]:
    s = "x" * 100_000
    for i in range(size // 100_080):
        yield _ev(name=f"{s}{i}", ts=i)


def names(size: int) -> Iterator[str]:
    """Distinct names just under 16 KB (the C decoder's per-event string limit), one event each."""
    for i in range(size // 15_080):
        yield _ev(name=f"{i:08d}" + "n" * 15_000, ts=i)


def inputs(size: int) -> Iterator[str]:
    """cpu_ops whose input-type lists all differ (record_shapes over ops of many arities and dtypes)."""
    kinds = ("float", "c10::Half", "long int", "Scalar", "ScalarList", "")
    for i in range(size // 290):
        types = [kinds[(i >> (2 * k)) % 6] for k in range(6)] + [f"T{i}"]
        yield _ev(name=f"aten::op{i % 64}", ts=i, args=json.dumps({"External id": i, "Input type": types}))


def nested(size: int) -> Iterator[str]:
    deep = '{"x":' * 30 + "[" * 28 + "1" + "]" * 28 + "}" * 30
    for i in range(size // (len(deep) + 80)):
        yield _ev(ts=i, args=deep)


def real(size: int) -> Iterator[str]:
    doc = json.loads(
        gzip.decompress(next((ROOT / "tests/traces/demo").glob("*.pt.trace.json.gz")).read_bytes())
    )
    events = doc["traceEvents"]
    span = max(e.get("ts", 0) + e.get("dur", 0) for e in events) - min(e.get("ts", 0) for e in events) + 1000
    one = len(json.dumps(events))
    for k in range(max(1, size // one)):
        for e in events:
            if "ts" in e and e.get("ph") != "M":
                e = dict(e, ts=e["ts"] + k * span)
                if k and isinstance(e.get("args"), dict):
                    e["args"] = {
                        a: (
                            v + k * 10**7 if a in ("External id", "correlation") and isinstance(v, int) else v
                        )
                        for a, v in e["args"].items()
                    }
            yield json.dumps(e)


SHAPES = {
    "tiny": tiny,
    "varied": varied,
    "ids": ids,
    "python": python,
    "long": long,
    "nested": nested,
    "real": real,
    "names": names,
    "inputs": inputs,
}


def write(path: Path, events: Iterator[str], gz: bool) -> int:
    """Stream the events into path; returns the JSON size."""
    size = 0
    with gzip.open(path, "wb", compresslevel=1) if gz else open(path, "wb") as f:
        head = b'{"schemaVersion":1,"traceEvents":['
        f.write(head)
        size += len(head)
        batch, first = [], True
        for e in events:
            batch.append(e)
            if len(batch) == 10_000:
                data = ("" if first else ",") + ",".join(batch)
                f.write(data.encode())
                size += len(data)
                batch, first = [], False
        data = ("" if first or not batch else ",") + ",".join(batch) + "]}"
        f.write(data.encode())
        size += len(data)
    return size


def measure(name: str, path: Path, size: int, jobs: str, native: str = "") -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    if native:
        env["IDLEHOUND_NATIVE"] = native
    if jobs:
        env["IDLEHOUND_JOBS"] = jobs
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, env=env, timeout=3600
    )
    dt = time.perf_counter() - t0
    line = next((x for x in r.stdout.splitlines() if x.startswith("RESULT")), None)
    if line is None:
        print(
            f"  {name:14s} FAILED (exit {r.returncode}): {(r.stderr or r.stdout).strip().splitlines()[-1:]}"
        )
        return float("nan")
    _, base, peak, kids, outcome = line.split(" ", 4)
    ratio = (int(peak) - int(base)) / size
    print(
        f"  {name:14s} {size / 2**20:7.0f} MiB  peak {int(peak) / 2**20:7.0f} MiB  net {ratio:4.2f}x  "
        f"worker peak {int(kids) / size:4.2f}x  {dt:6.1f} s  {outcome}",
        flush=True,
    )
    return ratio


BOMB = r"""
import sys, time
from idlehound import _limits
from idlehound.errors import TraceError
from idlehound.trace import load_trace

written = [0]
spool = _limits._spool


class Counting:  # the loader's temporary copy, counting what is written to it
    def __init__(self, f):
        self.f = f

    def __getattr__(self, k):
        return getattr(self.f, k)

    def write(self, b):
        written[0] += len(b)
        return self.f.write(b)

    def __enter__(self):
        self.f.__enter__()
        return self

    def __exit__(self, *a):
        return self.f.__exit__(*a)


_limits._spool = lambda: Counting(spool())
t0 = time.perf_counter()
try:
    load_trace(sys.argv[1])
    outcome = "loaded"
except TraceError as e:
    outcome = str(e).split(": ", 1)[1][:80]
print("RESULT", time.perf_counter() - t0, written[0], outcome)
"""


def gzip_bomb(tmp: Path, mb: float = 5) -> None:
    """A gzip bomb of about `mb` MB (~1000x: 64 MiB of spaces compressed, repeated as gzip members). Target (issue
    31): refused in under 2 s having written under 100 MB of its decompressed bytes."""
    path = tmp / "bomb.pt.trace.json.gz"
    middle = gzip.compress(b" " * (64 << 20), 9)
    with open(path, "wb") as f:
        f.write(gzip.compress(b'{"traceEvents":['))
        while f.tell() < mb * 1e6:
            f.write(middle)
        f.write(gzip.compress(b"]}"))
    inflated = (path.stat().st_size // len(middle)) * (64 << 20)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    r = subprocess.run([sys.executable, "-c", BOMB, str(path)], capture_output=True, text=True, env=env)
    line = next((x for x in r.stdout.splitlines() if x.startswith("RESULT")), "")
    if not line:
        print(f"  gzip bomb FAILED: {r.stderr.strip().splitlines()[-1:]}")
        return
    _, dt, written, outcome = line.split(" ", 3)
    print(
        f"  gzip bomb {path.stat().st_size / 1e6:.1f} MB (inflates to {inflated / 2**30:.1f} GiB): "
        f"{float(dt):.2f} s, {int(written) / 2**20:.0f} MiB written: {outcome}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100)
    ap.add_argument("--cases", default=",".join(SHAPES))
    ap.add_argument("--gzip", action="store_true", help="also each shape gzipped")
    ap.add_argument("--jobs", default="", help="IDLEHOUND_JOBS for the analysis (default: all cores)")
    ap.add_argument("--bomb", action="store_true", help="also time a 5 MB gzip bomb's refusal")
    ap.add_argument(
        "--paths", choices=("default", "both"), default="default", help="both: C and msgspec decoders"
    )
    a = ap.parse_args()
    size = int(a.mb * 2**20)
    print(f"peak RSS (net of interpreter and imports) over the JSON size, ~{a.mb:g} MiB per shape:")
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        if a.bomb:
            gzip_bomb(Path(tmp))
        for case in [c for c in a.cases.split(",") if c]:
            for gz in (False, True) if a.gzip else (False,):
                path = Path(tmp) / ("case.pt.trace.json" + (".gz" if gz else ""))
                n = write(path, SHAPES[case](size), gz)
                for native in ("1", "0") if a.paths == "both" else ("",):
                    label = case + (" (gz)" if gz else "") + {"1": " C", "0": " msgspec", "": ""}[native]
                    ratio = measure(label, path, n, a.jobs, native)
                    worst = max(worst, ratio) if ratio == ratio else worst
                path.unlink()
    print(f"worst: {worst:.2f}x")


if __name__ == "__main__":
    main()
