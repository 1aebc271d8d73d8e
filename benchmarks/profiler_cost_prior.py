"""Regenerate src/idlehound/data/profiler_cost.json: the prior of the profiler's cost per recorded host event.

Each recorded run folder whose run.json holds usable unprofiled steps (tests/traces/**/run.json: every steady step
before and after the window, not bursty or bimodal) is analysed; the replay's observer fit gives its cost per host
event (docs/metrics.md, Replay). The prior keeps every folder's value, their median and their range (the low and
high ends every prediction made with the prior is given for), the host events per step by kind, and the profiler
settings each folder was recorded with. Folders whose fit cannot explain the run are listed with the reason and
left out.

    PYTHONPATH=src python benchmarks/profiler_cost_prior.py [--check]

--check prints the table and what would change, without writing. The GPU calibration
(tests/device/profiler_cost_h200.py) writes the same file from loops timed with and without the profiler.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from idlehound.analysis import _observer as observer  # noqa: E402
from idlehound.pipeline import analyze_path  # noqa: E402

TRACES = ROOT / "tests" / "traces"


def settings_of(folder: Path, kinds: dict[str, int]) -> dict[str, bool]:
    """The torch.profiler settings the trace was recorded with, as the trace shows them."""
    text = ""
    for p in folder.glob("*.pt.trace.json.gz"):
        with gzip.open(p, "rt") as f:
            text += f.read()
    return {
        "with_stack": kinds.get("python_function", 0) > 0,
        "record_shapes": '"Input Dims"' in text,
        "profile_memory": '"[memory]"' in text,
    }


def fit_folder(folder: Path) -> dict:
    run = json.loads((folder / "run.json").read_text())
    row: dict = {"folder": str(folder.relative_to(ROOT))}
    why = observer.unusable(observer.steady_steps(run), run)
    if why is not None:
        return {**row, "left_out": why or "no unprofiled steps"}
    a = analyze_path(folder).analysis
    obs, rp = a.observer, a.replay
    if obs.get("correction") != observer.FITTED or "overhead_us" not in obs:
        return {
            **row,
            "left_out": obs.get("fit_not_used") or "the fit used one host rate, not a cost per event",
        }
    n = max(len(rp.steps), 1)
    kinds = {k: round(v / n, 1) for k, v in rp.kind_events.items()}
    return {
        **row,
        "overhead_us": round(obs["overhead_us"], 3),
        "unprofiled_ms": round(obs["unprofiled_ms"], 3),
        "recorded_ms": round(obs["recorded_ms"], 3),
        "host_events_per_step": kinds,
        "settings": settings_of(folder, rp.kind_events),
        "gpu": run.get("environment", {}).get("gpu"),
        "torch": run.get("environment", {}).get("torch"),
    }


def build(rows: list[dict], old: dict) -> dict:
    kept = [r for r in rows if "overhead_us" in r]
    v = np.array([r["overhead_us"] for r in kept])
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return {
        "about": (
            "The profiler's cost per host event it records (µs), applied by the replay to every trace without "
            "usable unprofiled timing (docs/metrics.md, Replay). Regenerate: benchmarks/profiler_cost_prior.py "
            "(recorded folders) or tests/device/profiler_cost_h200.py (a GPU calibration run)."
        ),
        "generated_by": "benchmarks/profiler_cost_prior.py",
        "commit": commit,
        "method": "per folder: the replay's observer fit of one cost per host event to the mean steady unprofiled step",
        "overhead_us": {
            "median": round(float(np.median(v)), 3),
            "low": round(float(v.min()), 3),
            "high": round(float(v.max()), 3),
            "spread": "low/high: the smallest and largest folder's value",
        },
        "kind_weights": old.get("kind_weights") or {},
        "kind_weights_source": old.get("kind_weights_source")
        or (
            "one cost for every kind of event: these folders give one equation each, too few to separate the "
            "kinds; the GPU calibration (tests/device/profiler_cost_h200.py) fits them"
        ),
        "loops": kept,
        "left_out": [r for r in rows if "left_out" in r],
        "fix_constants": old["fix_constants"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="print only; do not write the file")
    args = ap.parse_args()
    observer.prior_data.cache_clear()
    old = observer.prior_data()
    rows = [fit_folder(p.parent) for p in sorted(TRACES.glob("**/run.json"))]
    for r in rows:
        fig = f"{r['overhead_us']:6.2f} µs" if "overhead_us" in r else f"left out: {r['left_out']}"
        print(f"{r['folder']:48s} {fig}")
    doc = build(rows, old)
    o = doc["overhead_us"]
    print(f"prior from {len(doc['loops'])} loops: {o['median']} µs ({o['low']}-{o['high']})")
    if not args.check:
        observer.PRIOR_FILE.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {observer.PRIOR_FILE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
