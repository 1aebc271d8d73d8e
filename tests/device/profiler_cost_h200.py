"""GPU calibration of the profiler-cost prior (issue 30, item 1): what torch.profiler costs per recorded host
event, by event kind and by profiler settings, measured on at least 10 loops recorded with and without it.

Each loop runs under `idlehound run` once per setting (Python stacks on/off, memory on/off; shapes are always
recorded by `idlehound run`): the run folder holds the profiled window and every unprofiled step before and after
it (CUDA events), so each run is one loop timed with and without the profiler in the same process. Per run the
replay's observer fit gives the profiler's cost per host event (docs/metrics.md, Replay); the host events per step
by kind (Python frames, ops, CUDA runtime/driver calls, user annotations, other) come from the same analysis. The
kinds' relative costs are then fitted across all runs by non-negative least squares (total profiler time per step =
sum over kinds of cost x events), and the file src/idlehound/data/profiler_cost.json is rewritten: every loop's
value, their median and range, the kind weights, the settings, the machine and the commit.

Run on a GPU machine from the repository root: `python3 tests/device/profiler_cost_h200.py OUTDIR [names...]`.
Writes OUTDIR/runs/<loop>-<setting>/ (run folders), OUTDIR/calibration.json, OUTDIR/log.txt, and (unless
--no-write) the package's data file. Not run yet: no GPU was lent when it was written (2026-12-05).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))

from _common import log  # noqa: E402

from idlehound.analysis import _observer as observer  # noqa: E402
from idlehound.analysis._replay import EVENT_KINDS  # noqa: E402
from idlehound.pipeline import analyze_path  # noqa: E402

S = ROOT / "tests" / "scripts"
# name: (script, args, skip, active): at least 10 loops of different shapes (plain PyTorch, Trainer, Lightning).
LOOPS = {
    "tiny_host": (S / "replay" / "tiny_host.py", ["60"], 20, 5),
    "micro_item": (S / "replay" / "micro_item.py", ["40"], 10, 4),
    "data_bound": (S / "replay" / "data_bound.py", ["36"], 10, 5),
    "hf_gpt2": (S / "replay" / "hf_gpt2.py", ["40"], 15, 5),
    "lightning_bar": (S / "replay" / "lightning_bar.py", ["40"], 15, 5),
    "launch_bound": (S / "planted" / "launch_bound.py", ["40"], 15, 5),
    "sync_item": (S / "planted" / "sync_item.py", ["40"], 15, 5),
    "memory_churn": (S / "planted" / "memory_churn.py", ["40"], 15, 5),
    "host_python": (S / "planted" / "host_python.py", ["40"], 15, 5),
    "pageable": (S / "planted" / "pageable.py", ["40"], 15, 5),
    "fp32_math": (S / "planted" / "fp32_math.py", ["40"], 15, 5),
    "healthy": (S / "planted" / "healthy.py", ["40"], 15, 5),
}
SETTINGS = {"stack": [], "nostack": ["--no-stack"], "stack_memory": ["--memory"]}


def record(out: Path, name: str, setting: str, env: dict, timeout: float) -> Path | None:
    script, args, skip, active = LOOPS[name]
    logdir = out / "runs" / f"{name}-{setting}"
    cmd = [sys.executable, "-m", "idlehound", "run", "--logdir", str(logdir), "--name", name]
    cmd += ["--skip", str(skip), "--warmup", "2", "--active", str(active), "--no-report", *SETTINGS[setting]]
    cmd += [str(script), *args]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=script.parent)
    except subprocess.TimeoutExpired:
        log(out, f"{name} {setting}: timed out after {timeout:.0f} s")
        return None
    folders = sorted(logdir.glob("*/run.json"))
    if p.returncode != 0 or not folders:
        log(out, f"{name} {setting}: exit {p.returncode}: {p.stderr[-800:]}")
        return None
    return folders[-1].parent


def fit_run(folder: Path) -> dict:
    """One run's fitted cost per event and its host events per step by kind (None: the fit is not usable)."""
    a = analyze_path(folder).analysis
    obs, rp = a.observer, a.replay
    if rp is None or obs.get("correction") != observer.FITTED or "overhead_us" not in obs:
        return {
            "unusable": f"replay={rp is not None} correction={obs.get('correction')} notes={obs.get('notes')}"
        }
    n = max(len(rp.steps), 1)
    events = {k: rp.kind_events[k] / n for k in EVENT_KINDS}
    return {
        "overhead_us": obs["overhead_us"],
        "unprofiled_ms": obs["unprofiled_ms"],
        "recorded_ms": obs["recorded_ms"],
        "host_events_per_step": events,
        "profiler_us_per_step": obs["overhead_us"] * sum(events.values()),
    }


def kind_weights(rows: list[dict]) -> dict[str, float]:
    """Each kind's cost relative to the mean event, by non-negative least squares over every run."""
    kinds = [k for k in EVENT_KINDS if any(r["host_events_per_step"][k] > 0 for r in rows)]
    a = np.array([[r["host_events_per_step"][k] for k in kinds] for r in rows])
    b = np.array([r["profiler_us_per_step"] for r in rows])
    c = _nnls(a, b)
    mean = b.sum() / a.sum()
    return {k: round(float(v / mean), 3) for k, v in zip(kinds, c)}


def _nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Non-negative least squares by projected gradient (a few kinds: no SciPy needed)."""
    x = np.full(a.shape[1], max(float(b.sum() / max(a.sum(), 1e-9)), 1e-6))
    step = 1.0 / max(float(np.linalg.norm(a, 2)) ** 2, 1e-12)
    for _ in range(20_000):
        x = np.clip(x - step * a.T @ (a @ x - b), 0.0, None)
    return x


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("names", nargs="*")
    ap.add_argument("--no-write", action="store_true", help="do not rewrite the package's data file")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds per recorded run")
    ap.add_argument(
        "--budget", type=float, default=0.0, help="start no run after this many seconds (0: none)"
    )
    ap.add_argument("--fit", type=Path, help="fit an earlier run's calibration.json (no recording)")
    args = ap.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    rows = json.loads(args.fit.read_text()) if args.fit else record_all(out, args)
    return write_prior(out, rows, args.no_write)


def record_all(out: Path, args: argparse.Namespace) -> list[dict]:
    """Every loop under each setting, settings outermost so that a cut budget still leaves whole settings."""
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": f"{ROOT / 'src'}:{os.environ.get('PYTHONPATH', '')}",
    }
    machine = _machine()
    start = time.time()
    recorded: list[tuple[str, str, Path]] = []
    for setting in SETTINGS:
        for name in args.names or list(LOOPS):
            if args.budget and time.time() - start > args.budget:
                log(out, f"budget of {args.budget:.0f} s spent: {name} {setting} and later runs not recorded")
                return fit_all(out, recorded, machine)
            t0 = time.time()
            folder = record(out, name, setting, env, args.timeout)
            log(out, f"{name} {setting}: recorded={folder is not None} ({time.time() - t0:.0f} s)")
            if folder:
                recorded.append((name, setting, folder))
    return fit_all(out, recorded, machine)


def fit_all(out: Path, recorded: list[tuple[str, str, Path]], machine: str) -> list[dict]:
    """Fit every recorded run in parallel once the GPU work is over (the fits need no GPU)."""
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=8, mp_context=ctx) as pool:
        fits = list(pool.map(fit_run, [folder for _, _, folder in recorded]))
    rows = []
    for (name, setting, folder), row in zip(recorded, fits):
        log(out, f"{name} {setting}: {row.get('overhead_us', row.get('unusable'))} µs an event")
        if "overhead_us" in row:
            rows.append({"loop": name, "setting": setting, "folder": str(folder), "machine": machine, **row})
    (out / "calibration.json").write_text(json.dumps(rows, indent=1))
    return rows


def write_prior(out: Path, rows: list[dict], no_write: bool) -> int:
    stack = [r for r in rows if r["setting"] == "stack"]
    if len({r["loop"] for r in stack}) < 10:
        log(
            out,
            f"only {len(stack)} loops calibrated with stacks on (10 needed): the data file is left as it is",
        )
        return 1
    v = np.array([r["overhead_us"] for r in stack])
    old = json.loads(observer.PRIOR_FILE.read_text())
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    doc = {
        **old,
        "generated_by": "tests/device/profiler_cost_h200.py",
        "commit": commit,
        "machine": rows[0].get("machine") or _machine(),
        "method": "per loop: the replay's observer fit of one cost per host event to the mean steady unprofiled "
        "step of the same run (Python stacks on); kind weights: non-negative least squares over every run and "
        "setting",
        "overhead_us": {
            "median": round(float(np.median(v)), 3),
            "low": round(float(v.min()), 3),
            "high": round(float(v.max()), 3),
            "spread": "low/high: the smallest and largest loop's value",
        },
        "kind_weights": kind_weights(rows),
        "kind_weights_source": f"fitted over {len(rows)} runs ({len(stack)} loops x settings {list(SETTINGS)})",
        "loops": [
            {k: r[k] for k in ("loop", "overhead_us", "unprofiled_ms", "recorded_ms", "host_events_per_step")}
            for r in stack
        ],
        "settings_runs": [{k: r[k] for k in ("loop", "setting", "overhead_us")} for r in rows],
        "left_out": [],
    }
    log(out, f"prior: {doc['overhead_us']}, kind weights {doc['kind_weights']}")
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    (out / "profiler_cost.json").write_text(text)
    if not no_write:
        observer.PRIOR_FILE.write_text(text)
        log(out, f"wrote {observer.PRIOR_FILE}")
    return 0


def _machine() -> str:
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return f"{gpu}, torch {torch.__version__}"


if __name__ == "__main__":
    raise SystemExit(main())
