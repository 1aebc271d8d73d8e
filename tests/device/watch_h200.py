"""Issue 34 on the H200: a loader that turns 5x slower part-way gets a window within 2xK steps whose comparison
names data loading and its line, and `idlehound capture` from a second shell opens a window in a running job.

Run from the repository root on a GPU machine: `python3 tests/device/watch_h200.py OUTDIR`. Prints PASS/FAIL lines
(also in OUTDIR/log.txt) and packs both run folders into OUTDIR/watch_runs.tgz.
"""

import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import log  # noqa: E402

SCRIPT = HERE / "scripts" / "slow_loader_gpu.py"
LOADER_LINE = 28  # `for step, (x, y) in enumerate(loader):`
K = 20  # WatchOptions.k


def check(out: Path, ok: bool, what: str) -> bool:
    log(out, f"{'PASS' if ok else 'FAIL'} {what}")
    return ok


def idlehound(*args: str, env: dict | None = None, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "idlehound", *args],
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def windows(run: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(run.glob("windows/step*/window.json"))]


def wait_for(cond, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.1)
    return None


def slowdown(out: Path, logdir: Path) -> None:
    t0 = time.monotonic()
    p = idlehound(
        "run",
        "--logdir",
        str(logdir),
        "--watch",
        "--capture-when",
        "slower=1.3",
        "--no-report",
        str(SCRIPT),
        env={"SLOW_AFTER": "300", "STEPS": "480"},
    )
    so, se = p.communicate(timeout=400)
    (out / "slowdown.stderr.txt").write_text(se)
    log(out, f"slowdown run: exit {p.returncode} in {time.monotonic() - t0:.1f} s")
    run = next(logdir.iterdir())
    ws = windows(run)
    log(
        out, "windows: " + json.dumps([{k: w.get(k) for k in ("start_step", "reason", "status")} for w in ws])
    )
    slower = [w for w in ws if str(w.get("reason", "")).startswith("slower")]
    check(out, len(slower) == 1 and slower[0]["status"] == "saved", "one window on the slowdown, saved")
    if slower:
        s = slower[0]["start_step"]
        check(
            out,
            300 < s <= 300 + 2 * K,
            f"window at step {s}, within 2xK={2 * K} steps of the slowdown at 300",
        )
    header = json.loads((run / "steps.jsonl").read_text().splitlines()[0])
    check(out, header.get("clock") == "cuda_events", f"step clock is {header.get('clock')!r}")
    r = idlehound("report", str(run), "-o", str(out / "slowdown_report.html"))
    ro, re_ = r.communicate(timeout=300)
    (out / "slowdown_report.txt").write_text(ro + "\n--- stderr\n" + re_)
    lines = [ln for ln in ro.splitlines() if ln.startswith("window at step")]
    log(out, "report: " + " | ".join(lines))
    check(
        out,
        any("grew most: data loading" in ln and f"slow_loader_gpu.py:{LOADER_LINE}" in ln for ln in lines),
        "the comparison names data loading and the loader's line",
    )


def on_demand(out: Path, logdir: Path) -> None:
    job = idlehound(
        "run",
        "--logdir",
        str(logdir),
        "--watch",
        "--no-report",
        str(SCRIPT),
        env={"STEPS": "5000", "SLOW_AFTER": "999999"},
    )
    run = wait_for(lambda: next(iter(logdir.iterdir()), None) if logdir.exists() else None)
    steps = run / "steps.jsonl" if run else None
    wait_for(lambda: steps is not None and steps.exists() and len(steps.read_text().splitlines()) > 300)
    t0 = time.monotonic()
    c = idlehound("capture", str(run), "--steps", "3")
    co, ce = c.communicate(timeout=200)
    log(out, f"capture: exit {c.returncode} in {time.monotonic() - t0:.1f} s: {co.strip()} {ce.strip()}")
    jo, je = job.communicate(timeout=400)
    (out / "ondemand.stderr.txt").write_text(je)
    ws = [w for w in windows(run) if w.get("reason") == "idlehound capture"]
    check(
        out,
        c.returncode == 0 and len(ws) == 1 and ws[0]["status"] == "saved",
        f"idlehound capture from a second shell: window at step {ws[0]['start_step'] if ws else None}",
    )
    check(out, job.returncode == 0 and "trained" in je, f"the job ended as it would (exit {job.returncode})")


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    runs = out / "runs"
    for name, fn in (("slowdown", slowdown), ("ondemand", on_demand)):
        try:
            fn(out, runs / name)
        except Exception as e:  # noqa: BLE001  (one part failing must not hide the other's figures)
            log(out, f"FAIL {name}: {type(e).__name__}: {e}")
    with tarfile.open(out / "watch_runs.tgz", "w:gz") as tar:
        tar.add(runs, arcname="watch_runs")


if __name__ == "__main__":
    main()
