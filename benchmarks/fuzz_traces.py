"""Fuzz the analysis with mutated real traces, and measure memory on hostile inputs.

    python benchmarks/fuzz_traces.py [N] [--seed S] [--traces healthy,demo] [--memory-mb 50] [--no-memory]

Part 1 mutates the recorded run folders of tests/traces/ (trace, run.json, samples.json, sidecar) N times
(default 2000) and analyses each case as the CLI does. It prints the counts of clean errors, analysed
cases, internal errors (a bug: any exception other than IdlehoundError), impossible figures (a document
that fails check_document) and invalid JSON, with an example of each failure.
Targets: 0 internal errors, 0 impossible figures, 0 invalid JSON.

Part 2 builds hostile files of about --memory-mb uncompressed (a gzip bomb, many tiny events, long
strings, a real trace repeated) and runs each in a fresh process, printing peak RSS over the uncompressed
size. Target: at most 2x (net of the RSS after imports; peak read from /proc VmHWM, reset after imports).
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from tests.fuzzing import load_sources, mutate, run_case  # noqa: E402


def fuzz(n: int, seed: int, names: list[str] | None) -> dict[str, int]:
    rng = random.Random(seed)
    sources = load_sources(names)
    counts: collections.Counter = collections.Counter()
    ratios: list[tuple[float, str]] = []
    examples: dict[str, list[str]] = collections.defaultdict(list)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n):
            src = rng.choice(sources)
            case = mutate(src, rng)
            path = case.write(Path(tmp) / f"case{i}")
            size = len(gzip.decompress(path.read_bytes())) if path.suffix == ".gz" else path.stat().st_size
            before = _status("VmRSS:")
            _reset_peak()
            out = run_case(path)
            if out.kind == "analysed":  # peak growth of this process over the uncompressed trace
                ratios.append(((_status("VmHWM:") - before) / max(size, 1), label_of(case)))
            counts[out.kind] += 1
            label = label_of(case)
            if out.kind == "internal":
                examples["internal error"].append(f"{label}: {out.message}")
            if out.problems:
                counts["impossible"] += 1
                examples["impossible figure"].append(f"{label}: {out.problems[:3]}")
            if out.invalid_json:
                counts["invalid_json"] += 1
                examples["invalid JSON"].append(f"{label}: {out.invalid_json}")
            for p in path.parent.iterdir():
                p.unlink()
            path.parent.rmdir()
            if (i + 1) % 250 == 0:  # progress, for long runs
                print(
                    f"  ... {i + 1} cases: "
                    + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                    + (f", max memory {max(ratios)[0]:.2f}x" if ratios else ""),
                    flush=True,
                )
    dt = time.perf_counter() - t0
    print(f"{n} mutated real traces ({len(sources)} recorded runs, seed {seed}) in {dt:.0f} s")
    print(f"  clean errors    {counts['error']}")
    print(f"  analysed        {counts['analysed']}")
    print(f"  internal errors {counts['internal']}")
    print(f"  impossible      {counts['impossible']}")
    print(f"  invalid JSON    {counts['invalid_json']}")
    if ratios:
        worst, which = max(ratios)
        print(
            f"  peak memory per analysed case (growth over the uncompressed trace): median "
            f"{sorted(r for r, _ in ratios)[len(ratios) // 2]:.2f}x, max {worst:.2f}x ({which[:120]})"
        )
    for what, ex in examples.items():
        print(f"  {what}, first of {len(ex)}:")
        for line in ex[:5]:
            print(f"    {line[:300]}")
    return counts


def label_of(case) -> str:
    return f"{case.source} {' '.join(case.ops)}"


def _status(key: str) -> int:
    """kB -> bytes, from /proc (0 where there is none)."""
    try:
        return next(int(x.split()[1]) * 1024 for x in open("/proc/self/status") if x.startswith(key))
    except (OSError, StopIteration):
        return 0


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # the peak (VmHWM) starts again from the current RSS
    except OSError:
        pass


CHILD = r"""
import sys
import idlehound.pipeline, idlehound.report.terminal
from idlehound.errors import IdlehoundError

def status(key):  # kB -> bytes, from /proc (ru_maxrss would include the parent's peak from before exec)
    return next(int(x.split()[1]) * 1024 for x in open("/proc/self/status") if x.startswith(key))

base = status("VmRSS:")
open("/proc/self/clear_refs", "w").write("5")  # reset the peak (VmHWM) to the current RSS
try:
    idlehound.pipeline.analyze_path(sys.argv[1])
    outcome = "analysed"
except IdlehoundError as e:
    outcome = "error: " + str(e)[-90:]
print("RESULT", base, status("VmHWM:"), outcome)
"""


def _tiny(n: int) -> bytes:
    ev = (f'{{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":{i},"dur":1}}' for i in range(n))
    return b'{"traceEvents":[' + ",".join(ev).encode() + b"]}"


def _long(n: int) -> bytes:
    s = "x" * 100_000
    ev = (f'{{"ph":"X","cat":"cpu_op","name":"{s}{i}","pid":1,"tid":1,"ts":{i},"dur":1}}' for i in range(n))
    return b'{"traceEvents":[' + ",".join(ev).encode() + b"]}"


def _repeated(target: int) -> bytes:
    doc = json.loads(
        gzip.decompress(next((ROOT / "tests/traces/demo").glob("*.pt.trace.json.gz")).read_bytes())
    )
    events = doc["traceEvents"]
    span = max(e.get("ts", 0) + e.get("dur", 0) for e in events) - min(e.get("ts", 0) for e in events) + 1000
    one = len(json.dumps(events))
    out = []
    for k in range(max(1, target // one)):
        for e in events:
            if "ts" in e and e.get("ph") != "M":
                e = dict(e, ts=e["ts"] + k * span)
            out.append(e)
    doc["traceEvents"] = out
    return json.dumps(doc).encode()


def memory(mb: int) -> list[tuple[str, float]]:
    size = mb * 2**20
    cases = {
        "tiny events": lambda: _tiny(size // 70),
        "long strings": lambda: _long(size // 100_010),
        "real trace repeated": lambda: _repeated(size),
    }
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in cases.items():
            data = make()
            for gz in (False, True):
                p = Path(tmp) / ("case.pt.trace.json" + (".gz" if gz else ""))
                p.write_bytes(gzip.compress(data, 1) if gz else data)
                rows.append(_measure(f"{name}{' (gz)' if gz else ''}", p, len(data)))
                p.unlink()
            del data
        bomb = Path(tmp) / "bomb.pt.trace.json.gz"
        with gzip.open(bomb, "wb", compresslevel=9) as f:
            f.write(b'{"traceEvents":[')
            chunk = b" " * 2**20
            for _ in range(2 * mb):  # twice the limit set below
                f.write(chunk)
            f.write(b"]}")
        rows.append(
            _measure(
                "gzip bomb (limit = --memory-mb)",
                bomb,
                mb * 2**20,
                {"IDLEHOUND_MAX_TRACE_BYTES": str(mb * 2**20)},
            )
        )
    return rows


def _measure(name: str, path: Path, uncompressed: int, env: dict | None = None) -> tuple[str, float]:
    e = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})}
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, env=e, timeout=600
    )
    dt = time.perf_counter() - t0
    line = next((x for x in r.stdout.splitlines() if x.startswith("RESULT")), None)
    if line is None:
        print(f"  {name:34s} FAILED: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
        return name, float("nan")
    _, base, peak, outcome = line.split(" ", 3)
    ratio = (int(peak) - int(base)) / uncompressed
    print(
        f"  {name:34s} {uncompressed / 2**20:7.0f} MiB  peak {int(peak) / 2**20:7.0f} MiB  "
        f"net {ratio:4.2f}x  {dt:5.1f} s  {outcome}"
    )
    return name, ratio


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--traces", default="", help="comma-separated recorded runs (default: all)")
    ap.add_argument("--memory-mb", type=int, default=50)
    ap.add_argument("--no-memory", action="store_true")
    a = ap.parse_args()
    if a.n:
        fuzz(a.n, a.seed, [x for x in a.traces.split(",") if x] or None)
    if not a.no_memory:
        print(
            f"peak memory (RSS, net of the interpreter and imports) over the uncompressed input, ~{a.memory_mb} MiB:"
        )
        memory(a.memory_mb)


if __name__ == "__main__":
    main()
