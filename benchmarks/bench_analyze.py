"""Analysis speed and memory on large traces, against json.loads of the same file (and HTA where installed).

    python benchmarks/bench_analyze.py [--sizes 100,1000] [--jobs 1,all] [--repeat 3] [--gzip] [--hta]

Builds traces of the given sizes (MB) by repeating the profiled steps of a real trace (ids shifted so links stay
unique, times shifted step after step), then, each in a fresh subprocess: one run timed stage by stage
(read/decompress, load = decode + columns, analyse, diagnose, report document), idlehound end to end with each
number of worker processes (median of --repeat), json.loads alone, and HTA where asked. Reports MB/s of JSON,
peak RSS (and the worker processes' own peak), and the ratio to json.loads. Targets (issue 21): >= 150 MB/s end to
end on 1 GB, i.e. <= 0.2x json.loads; peak RSS <= 1x the file.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ID_KEYS = ("External id", "correlation", "Python id", "Python parent id", "Record function id", "Ev Idx")

CHILD = r"""
import os, resource, sys, time
path, tool = sys.argv[1], sys.argv[2]
peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
kids = lambda: resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
t0 = time.perf_counter()
if tool.startswith("stages"):  # one process, each stage timed (inner calls by wrapping them)
    from pathlib import Path
    from idlehound import _limits
    from idlehound.trace import _decode, _kineto, _parallel, _table
    from idlehound.analysis import analyze, _core
    import idlehound.diagnose
    _diag = sys.modules["idlehound.diagnose"]
    from idlehound.report import build
    spent = {}
    def timed(fn, key):
        def run(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[key] = spent.get(key, 0.0) + time.perf_counter() - t
        return run
    _decode.decode_batch = timed(_decode.decode_batch, "load: msgspec decode")
    _parallel.max_depth = timed(_parallel.max_depth, "load: depth check")
    _table.TableBuilder.add = timed(_table.TableBuilder.add, "load: columns (msgspec path)")
    _table.TableBuilder.add_text = timed(_table.TableBuilder.add_text, "load: C decoder (decode + columns)")
    _table.TableBuilder.build = timed(_table.TableBuilder.build, "load: join columns")
    for name in ("_Context", "_steps", "_breakdown", "SourceMap", "_Gaps", "_sync_sites", "_copies", "_kernels",
                 "_memory", "_dataloader", "_timeline", "_rank_figures", "_slow_launches", "_replay", "_observer"):
        if hasattr(_core, name):
            setattr(_core, name, timed(getattr(_core, name), "analyse: " + name.strip("_")))
    if hasattr(_core, "observer"):  # the observer correction moved to its own module (issue 30)
        _core.observer.correct = timed(_core.observer.correct, "analyse: observer")
    _diag.predict = timed(_diag.predict, "diagnose: replay predictions")
    marks = [("start", t0, peak()), ("imports", time.perf_counter(), peak())]
    pages = _limits.small_pages()  # as analyze_path runs (kept referenced: a dropped one restores huge pages)
    pages.__enter__()
    buf = _kineto._read(Path(path), _limits.max_trace_bytes())
    marks.append(("decompress" if path.endswith(".gz") else "read", time.perf_counter(), peak()))
    trace = _kineto.parse_trace_bytes(buf, path); del buf; marks.append(("load", time.perf_counter(), peak()))
    a = analyze(trace); marks.append(("analyse", time.perf_counter(), peak()))
    f = _diag.diagnose(a); marks.append(("diagnose", time.perf_counter(), peak()))
    build(a, f); marks.append(("report", time.perf_counter(), peak()))
    for (_, ta, _), (name, tb, rss) in zip(marks, marks[1:]):
        print(f"STAGE {name} {tb - ta:.3f} {rss}")
    for key, dt in spent.items():
        print(f"INNER {dt:.3f} {key}")
    extra = f"{len(trace.events)} events"
elif tool == "idlehound":
    from idlehound.pipeline import analyze_path
    res = analyze_path(path)
    extra = f"{len(res.analysis.trace.events)} events, {len(res.findings)} findings, jobs={os.environ.get('IDLEHOUND_JOBS')}"
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
me, ch = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = me.ru_utime + me.ru_stime + ch.ru_utime + ch.ru_stime  # the host is shared: CPU time says more than wall
print(f"RESULT {dt:.3f} {peak()} {kids()} cpu {cpu:.2f} s, {extra}")
"""


def build(source: Path, target_mb: int, out: Path) -> int:
    """Write a trace of about target_mb by repeating source's ProfilerStep window; returns its size."""
    files = sorted(source.glob("*.pt.trace.json*")) if source.is_dir() else [source]
    raw = files[0].read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    events = doc.pop("traceEvents")
    steps = [
        e
        for e in events
        if e.get("cat") == "user_annotation" and e.get("name", "").startswith("ProfilerStep#")
    ]
    lo = min(e["ts"] for e in steps)
    hi = max(e["ts"] + e["dur"] for e in steps)
    body = [e for e in events if e.get("ph") != "M" and "ts" in e and lo <= e["ts"] <= hi + 5e4]
    meta = [e for e in events if e.get("ph") == "M"]
    max_id = (
        max(
            (
                v
                for e in body
                for k, v in (e.get("args") or {}).items()
                if k in ID_KEYS and isinstance(v, int)
            ),
            default=0,
        )
        + 1
    )
    chunk = sum(len(json.dumps(e)) + 2 for e in body)
    copies = max(1, target_mb * 1_000_000 // chunk)
    mix = Counter(e.get("cat", "") for e in body).most_common(7)
    print(
        f"trace of {target_mb} MB: {copies} copies of {len(body)} events ({chunk // len(body)} bytes each) from "
        f"{files[0].name}; " + ", ".join(f"{c} {n / len(body):.0%}" for c, n in mix),
        flush=True,
    )
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


def measure(path: Path, tool: str, timeout: int, python: str = sys.executable, jobs: str = "") -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    if jobs:
        env["IDLEHOUND_JOBS"] = jobs
    try:
        r = subprocess.run(
            [python, "-c", CHILD, str(path), tool], capture_output=True, text=True, timeout=timeout, env=env
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        return {"error": (r.stderr.strip().splitlines() or ["failed"])[-1][:120]}
    _, dt, rss, kids, extra = line.split(" ", 4)
    stages = [ln.split()[1:] for ln in r.stdout.splitlines() if ln.startswith("STAGE ")]
    inner = [ln.split(" ", 2)[1:] for ln in r.stdout.splitlines() if ln.startswith("INNER ")]
    return {
        "time": float(dt),
        "rss": int(rss),
        "kids": int(kids),
        "extra": extra,
        "stages": stages,
        "inner": inner,
    }


def median_run(
    path: Path, tool: str, repeat: int, timeout: int, python: str = sys.executable, jobs: str = ""
) -> dict:
    """The run of median time out of `repeat` (the machine is shared: single runs mislead)."""
    runs = [measure(path, tool, timeout, python, jobs) for _ in range(repeat)]
    ok = sorted((r for r in runs if "time" in r), key=lambda r: r["time"])
    if not ok:
        return runs[0]
    best = dict(ok[(len(ok) - 1) // 2])
    best["all"] = [r["time"] for r in runs if "time" in r]
    best["rss"] = max(r["rss"] for r in ok)
    best["kids"] = max(r["kids"] for r in ok)
    return best


def print_stages(size: int, res: dict) -> None:
    if "stages" not in res:
        print(f"  stages: {res.get('error')}")
        return
    print(f"  stages, one process ({size / 1e6:.0f} MB):")
    for name, dt, rss in res["stages"]:
        dt = float(dt)
        speed = f"{size / 1e6 / dt:8.1f} MB/s" if dt > 0 else ""
        mem = (
            f"peak RSS so far {int(rss) / 1e6:6.0f} MB ({int(rss) / size:.2f}x file)"
            if int(rss)
            else "(inside load)"
        )
        print(f"    {name:10} {dt:7.2f} s {speed:>13}  {mem}")
    print(f"  inside those stages (nested calls overlap; {res['extra']}):")
    for dt, key in sorted(res["inner"], key=lambda x: -float(x[0])):
        print(f"    {key:38} {float(dt):7.2f} s")


def print_row(size: int, label: str, res: dict) -> None:
    if "time" not in res:
        print(f"{size / 1e6:8.0f} MB  {label:16}  — {res.get('error')}", flush=True)
        return
    dt, rss = res["time"], res["rss"]
    kids = f" + workers' peak {res['kids'] / 1e6:.0f} MB" if res["kids"] else ""
    runs = " / ".join(f"{t:.2f}" for t in res.get("all", []))
    print(
        f"{size / 1e6:8.0f} MB  {label:16} {dt:7.2f} s {size / 1e6 / dt:7.1f} MB/s  peak RSS {rss / 1e6:6.0f} MB "
        f"({rss / size:.2f}x file){kids}  runs {runs}  {res['extra']}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--sizes", default="100", help="trace sizes in MB (e.g. 100,1000; 1 GB takes minutes here)"
    )
    ap.add_argument("--source", default=str(ROOT / "tests" / "traces" / "demo"))
    ap.add_argument("--jobs", default="1,all", help="worker processes for idlehound runs (IDLEHOUND_JOBS)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per tool; the median is reported")
    ap.add_argument("--gzip", action="store_true", help="also time the same trace gzipped (decompression)")
    ap.add_argument("--no-json", action="store_true", help="skip the json.loads baseline")
    ap.add_argument("--hta", action="store_true", help="also run HTA (pip install traceinsight==0.6.1)")
    ap.add_argument("--hta-python", default=sys.executable, help="interpreter that has HTA installed")
    ap.add_argument("--timeout", type=int, default=900)
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    print(f"{cores} cores, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for mb in (int(s) for s in args.sizes.split(",")):
            path = Path(tmp) / f"bench_{mb}mb.pt.trace.json"
            size = build(Path(args.source), mb, path)
            bench_size(path, size, args, cores)
            path.unlink()


def bench_size(path: Path, size: int, args: argparse.Namespace, cores: int) -> None:
    print_stages(size, measure(path, "stages", args.timeout, jobs="1"))
    times = {}
    for jobs in args.jobs.split(","):
        n = str(cores) if jobs == "all" else jobs
        res = median_run(path, "idlehound", args.repeat, args.timeout, jobs=n)
        print_row(size, f"idlehound -j{n}", res)
        times[n] = res.get("time")
    if args.gzip:
        gz = path.with_suffix(".json.gz")
        with open(path, "rb") as src, gzip.open(gz, "wb", compresslevel=6) as dst:
            dst.write(src.read())
        print_stages(size, measure(gz, "stages", args.timeout, jobs="1"))
        print_row(
            size,
            f"idlehound .gz -j{cores}",
            median_run(gz, "idlehound", args.repeat, args.timeout, jobs=str(cores)),
        )
        gz.unlink()
    if not args.no_json:
        base = median_run(path, "json", args.repeat, args.timeout)
        print_row(size, "json.loads only", base)
        for n, dt in times.items():
            if dt and base.get("time"):
                print(
                    f"{size / 1e6:8.0f} MB  idlehound -j{n} end to end = {dt / base['time']:.2f}x the time "
                    "json.loads needs to parse"
                )
    if args.hta and size <= 200e6:  # HTA: minutes per 100 MB
        hta = measure(path, "hta", args.timeout, args.hta_python)
        print_row(size, "HTA", hta)
        for n, dt in times.items():
            if dt and hta.get("time"):
                print(f"{size / 1e6:8.0f} MB  HTA takes {hta['time'] / dt:.1f}x the time of idlehound -j{n}")


if __name__ == "__main__":
    main()
