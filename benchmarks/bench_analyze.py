"""Analysis speed and memory on large traces, against json.loads of the same file (and HTA where installed).

    python benchmarks/bench_analyze.py [--sizes 100,1000] [--source tests/traces/demo] [--hta]

Builds traces of the given sizes (MB) by repeating the profiled steps of a real trace (ids shifted so links stay
unique, times shifted step after step), then times each tool in a fresh subprocess and reports MB/s of JSON and
peak RSS. Targets: idlehound at least 50 MB/s end to end, and peak memory at most about 2x the file size.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ID_KEYS = ("External id", "correlation", "Python id", "Python parent id", "Record function id", "Ev Idx")

CHILD = r"""
import resource, sys, time
path, tool = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if tool == "idlehound":
    from idlehound.pipeline import analyze_path
    res = analyze_path(path)
    extra = f"{len(res.analysis.trace.events)} events, {len(res.findings)} findings"
elif tool == "json":
    import json
    with open(path, "rb") as f:
        doc = json.loads(f.read())
    extra = f"{len(doc['traceEvents'])} events"
elif tool == "hta":
    import os, shutil, tempfile
    from hta.trace_analysis import TraceAnalysis
    d = tempfile.mkdtemp()
    shutil.copy(path, os.path.join(d, "rank0.pt.trace.json"))
    ta = TraceAnalysis(trace_dir=d)
    ta.get_temporal_breakdown(visualize=False)
    ta.get_idle_time_breakdown(visualize=False)
    extra = "temporal + idle time breakdown"
dt = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(f"RESULT {dt:.3f} {rss} {extra}")
"""


def build(source: Path, target_mb: int, out: Path) -> int:
    """Write a trace of about target_mb by repeating source's ProfilerStep window; returns its size."""
    files = sorted(source.glob("*.pt.trace.json*")) if source.is_dir() else [source]
    raw = files[0].read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    events = doc.pop("traceEvents")
    steps = [e for e in events if e.get("cat") == "user_annotation" and e.get("name", "").startswith("ProfilerStep#")]
    lo = min(e["ts"] for e in steps)
    hi = max(e["ts"] + e["dur"] for e in steps)
    body = [e for e in events if e.get("ph") != "M" and "ts" in e and lo <= e["ts"] <= hi + 5e4]
    meta = [e for e in events if e.get("ph") == "M"]
    max_id = max((v for e in body for k, v in (e.get("args") or {}).items() if k in ID_KEYS and isinstance(v, int)),
                 default=0) + 1
    chunk = sum(len(json.dumps(e)) + 2 for e in body)
    copies = max(1, target_mb * 1_000_000 // chunk)
    span = hi - lo + 10.0
    with open(out, "w") as f:
        head = json.dumps(doc)[:-1]
        f.write(head + ', "traceEvents": [\n')
        for e in meta:
            f.write(json.dumps(e) + ",\n")
        first = True
        for k in range(copies):
            shift, off = k * span, k * max_id
            for e in body:
                e2 = dict(e, ts=round(e["ts"] + shift, 3))
                if "args" in e:
                    a = dict(e["args"])
                    for key in ID_KEYS:
                        if isinstance(a.get(key), int) and a[key] > 0:
                            a[key] += off
                    if e.get("name", "").startswith("ProfilerStep#"):
                        pass
                    e2["args"] = a
                if e.get("name", "").startswith("ProfilerStep#"):
                    e2["name"] = f"ProfilerStep#{k * 1000 + int(e['name'].split('#')[1])}"
                f.write(("" if first else ",\n") + json.dumps(e2))
                first = False
        f.write("\n]}\n")
    return out.stat().st_size


def measure(path: Path, tool: str, timeout: int, python: str = sys.executable) -> tuple:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    try:
        r = subprocess.run([python, "-c", CHILD, str(path), tool], capture_output=True, text=True,
                           timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, None, f"timed out after {timeout} s"
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        return None, None, (r.stderr.strip().splitlines() or ["failed"])[-1][:120]
    _, dt, rss, extra = line.split(" ", 3)
    return float(dt), int(rss), extra


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,1000", help="trace sizes in MB")
    ap.add_argument("--source", default=str(ROOT / "tests" / "traces" / "demo"))
    ap.add_argument("--hta", action="store_true", help="also run HTA (pip install traceinsight==0.6.1)")
    ap.add_argument("--hta-python", default=sys.executable, help="interpreter that has HTA installed")
    ap.add_argument("--timeout", type=int, default=900)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mb in (int(s) for s in args.sizes.split(",")):
            path = Path(tmp) / f"bench_{mb}mb.pt.trace.json"
            size = build(Path(args.source), mb, path)
            tools = ["idlehound", "json"] + (["hta"] if args.hta and mb <= 200 else [])  # HTA: minutes per 100 MB
            for tool in tools:
                dt, rss, extra = measure(path, tool, args.timeout, args.hta_python if tool == "hta" else sys.executable)
                rows.append((size / 1e6, tool, dt, rss, extra))
                speed = f"{size / 1e6 / dt:8.1f} MB/s" if dt else "       —"
                mem = f"{rss / 1e6:8.0f} MB ({rss / size:.2f}x file)" if rss else ""
                t = f"{dt:8.2f} s" if dt else "       —"
                print(f"{size / 1e6:8.0f} MB  {tool:10} {t} {speed} peak RSS {mem}  {extra}", flush=True)
            path.unlink()
    base = {r[0]: r[2] for r in rows if r[1] == "json" and r[2]}
    for size, tool, dt, _, _ in rows:
        if tool == "idlehound" and dt and base.get(size):
            print(f"{size:8.0f} MB  idlehound end to end = {dt / base[size]:.2f}x the time json.loads needs to parse")


if __name__ == "__main__":
    main()
