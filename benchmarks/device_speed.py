"""Issue 21 on a many-core machine (the 16-core H200): a 1 GB trace, then an 8-rank folder of 1 GB traces.

Run from the repository root: `python3 benchmarks/device_speed.py OUTDIR` (about 5 minutes on 16 cores, at
most SPEED_BUDGET_S, default 450 s). Without msgspec on the machine, carry a wheel for its Python in .whl/
(`pip download msgspec zlib-ng --only-binary=:all: --python-version 3.12 -d .whl`): it is installed from there,
offline; zlib-ng/isal are optional (the stdlib zlib is the fallback).

Steps: build the C decoder in place (setup.py build_ext --inplace), build a ~1 GB trace from tests/traces/demo
(benchmarks/bench_analyze.py), time it stage by stage in one process, end to end with 1, 4 and all cores (and
the msgspec path, IDLEHOUND_NATIVE=0, with 1 and all), and json.loads alone; then hard-link it 8 times as rank-0..7.json
and time `idlehound analyze --ranks` on the folder. Peak RSS of each run; for the ranks also the machine's memory
in use at the peak (the rank processes run at once). Writes OUTDIR/log.txt and OUTDIR/results.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
DEADLINE = time.time() + float(os.environ.get("SPEED_BUDGET_S", "450"))
SIZE_MB = int(os.environ.get("SPEED_MB", "1000"))
RANKS = int(os.environ.get("SPEED_RANKS", "8"))
ONLY_RANKS = os.environ.get("SPEED_ONLY") == "ranks"  # skip the one-file runs (a short lease)


def log(out: Path, msg: str) -> None:
    line = f"{time.strftime('%H:%M:%S')} {msg}"
    print(line, flush=True)
    with open(out / "log.txt", "a") as f:
        f.write(line + "\n")


def left(cap: float) -> int:
    return int(max(5, min(cap, DEADLINE - time.time())))


def ensure_native(out: Path) -> None:
    """Build the C decoder in place (src/idlehound/trace/) for this machine's Python, as pip would."""
    r = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"], capture_output=True, text=True, cwd=ROOT
    )
    probe = subprocess.run(
        [sys.executable, "-c", "from idlehound.trace import _table; print(_table.native_available())"],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        },
    )
    log(out, f"C decoder: build rc={r.returncode} {r.stderr.strip()[-200:]}; in use: {probe.stdout.strip()}")


def ensure_msgspec(out: Path) -> None:
    for mod, pkg in (("msgspec", "msgspec"), ("zlib_ng", "zlib-ng"), ("isal", "isal")):
        try:
            __import__(mod)
            continue
        except ImportError:
            pass
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--no-index",
                "--find-links",
                str(ROOT / ".whl"),
                pkg,
            ],
            capture_output=True,
            text=True,
        )
        log(out, f"pip install {pkg} from .whl: rc={r.returncode} {r.stderr.strip()[-200:]}")


class MemWatch:
    """The machine's memory in use (MemTotal - MemAvailable) at its highest while a command runs."""

    def __init__(self) -> None:
        self.base = self.now()
        self.peak = self.base
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def now() -> int:
        info = dict(ln.split(":", 1) for ln in Path("/proc/meminfo").read_text().splitlines())
        return (int(info["MemTotal"].split()[0]) - int(info["MemAvailable"].split()[0])) * 1024

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, self.now())

    def __enter__(self) -> MemWatch:
        self._t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._t.join()


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", "speed-out"))
    out.mkdir(parents=True, exist_ok=True)
    ensure_msgspec(out)
    ensure_native(out)
    import bench_analyze as b

    cores = len(os.sched_getaffinity(0))
    log(out, f"{cores} cores, python {sys.version.split()[0]}, load {os.getloadavg()[0]:.1f}")
    res: dict = {"cores": cores, "python": sys.version.split()[0]}
    with tempfile.TemporaryDirectory(dir=os.environ.get("SPEED_TMP")) as tmp:
        path = Path(tmp) / "bench.pt.trace.json"
        t = time.time()
        size = b.build(ROOT / "tests" / "traces" / "demo", SIZE_MB, path)
        log(out, f"built {size / 1e6:.0f} MB in {time.time() - t:.0f} s")
        res["size"] = size
        if not ONLY_RANKS:
            one_file(out, b, path, size, cores, res)
        res["ranks"] = ranks(out, path, size, Path(tmp))
    (out / "results.json").write_text(json.dumps(res, indent=1))


def one_file(out: Path, b, path: Path, size: int, cores: int, res: dict) -> None:
    """Stage by stage in one process, end to end with 1, 4 and all cores, and json.loads alone."""
    st = b.measure(path, "stages", left(120), jobs="1")
    res["stages"] = st
    for name, dt, rss in st.get("stages", []):
        log(out, f"  stage {name:10} {float(dt):7.2f} s  peak RSS {int(rss) / 1e6:6.0f} MB")
    for dt, key in st.get("inner", []):
        log(out, f"    {key:38} {float(dt):7.2f} s")
    for jobs in ("1", "4", str(cores)):
        r = b.measure(path, "idlehound", left(120), jobs=jobs)
        res[f"jobs_{jobs}"] = r
        log(out, _row(size, f"idlehound -j{jobs}", r))
    os.environ["IDLEHOUND_NATIVE"] = "0"  # the msgspec path, for comparison
    for jobs in ("1", str(cores)):
        r = b.measure(path, "idlehound", left(120), jobs=jobs)
        res[f"msgspec_jobs_{jobs}"] = r
        log(out, _row(size, f"msgspec path -j{jobs}", r))
    del os.environ["IDLEHOUND_NATIVE"]
    r = b.measure(path, "json", left(120))
    res["json_loads"] = r
    log(out, _row(size, "json.loads only", r))
    for jobs in ("1", "4", str(cores)):
        if "time" in res[f"jobs_{jobs}"] and "time" in r:
            log(out, f"  -j{jobs}: {res[f'jobs_{jobs}']['time'] / r['time']:.2f}x the time of json.loads")


def _row(size: int, label: str, r: dict) -> str:
    if "time" not in r:
        return f"{label}: {r.get('error')}"
    return (
        f"{label:18} {r['time']:7.2f} s {size / 1e6 / r['time']:7.1f} MB/s  peak RSS {r['rss'] / 1e6:6.0f} MB "
        f"({r['rss'] / size:.2f}x file), workers' peak {r['kids'] / 1e6:.0f} MB  {r['extra']}"
    )


def ranks(out: Path, path: Path, size: int, tmp: Path) -> dict:
    folder = tmp / "ranks"
    folder.mkdir()
    for r in range(RANKS):
        os.link(path, folder / f"rank-{r}.json")  # the same bytes under 8 names: no 8 GB of disk
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    cmd = [
        sys.executable,
        "-c",
        "import resource, sys, time; t = time.perf_counter(); "
        "from idlehound.cli import main; sys.argv = ['idlehound', 'analyze', '--ranks', '--json', sys.argv[1]]\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
        "print('RANKS', time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "
        "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, file=sys.stderr)",
        str(folder),
    ]
    t = time.time()
    with MemWatch() as mem:
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=left(300))
        except subprocess.TimeoutExpired:
            log(out, f"ranks: timed out after {time.time() - t:.0f} s")
            return {"error": "timed out"}
    wall = time.time() - t
    line = next((ln for ln in p.stderr.splitlines() if ln.startswith("RANKS")), "")
    (out / "ranks.json").write_text(p.stdout[:2_000_000])
    if not line:
        log(out, f"ranks failed: {p.stderr.strip()[-300:]}")
        return {"error": p.stderr.strip()[-300:]}
    _, dt, rss, kids = line.split()
    total = RANKS * size
    doc = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
    used = mem.peak - mem.base
    log(
        out,
        f"ranks: {RANKS} x {size / 1e6:.0f} MB in {float(dt):.1f} s ({total / 1e6 / float(dt):.0f} MB/s), "
        f"parent peak {int(rss) / 1e6:.0f} MB, largest rank process {int(kids) / 1e6:.0f} MB "
        f"({int(kids) / size:.2f}x one file), machine memory in use at peak +{used / 1e9:.1f} GB "
        f"({used / total:.2f}x the {RANKS} files); {doc.get('ranks_compared')} ranks compared, rc={p.returncode}",
    )
    return {
        "time": float(dt),
        "wall": wall,
        "rss": int(rss),
        "kids": int(kids),
        "mem_used": used,
        "ranks_compared": doc.get("ranks_compared"),
        "rc": p.returncode,
    }


if __name__ == "__main__":
    main()
