"""Register the predictions for issue 30's validation loops before their A/B (docs/measurements/validation-h200.md).

    python benchmarks/register_validation.py RUNS OUTDIR [CANDIDATES.json]

RUNS holds <loop>/<run folder>/ as tests/device/validation_h200.py record writes them. Each run folder is analysed
twice: as recorded (run.json with its unprofiled steps) and as a bare trace (the trace file alone, copied to a temp
folder: what a user without run.json has). OUTDIR gets <loop>.json and <loop>.bare.json (the report documents)
and registered.json: per loop and mode the correction used, the step figures and the named findings in rank order
with their predicted gain and range. With CANDIDATES (tests/device/validation_plan_candidates.json) it also
writes OUTDIR/plan.json, chosen mechanically: per loop the variants of its top two named fixes (run.json
analysis) plus its sync and loader variants where the loop has them. Commit OUTDIR before any A/B of these
loops runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from idlehound.pipeline import analyze_path
from idlehound.report.files import write


def summarise(doc: dict[str, Any]) -> dict[str, Any]:
    rp = doc.get("replay") or {}
    keep = (
        "correction",
        "unprofiled_step_ms",
        "predicted_step_ms",
        "predicted_step_range_ms",
        "fit_not_used",
    )
    out: dict[str, Any] = {k: rp.get(k) for k in keep}
    out["recorded_step_ms"] = rp.get("recorded_step_ms")
    out["headline"] = doc.get("headline")
    out["findings"] = [
        {
            "cause": f["cause"],
            "kind": f["kind"],
            "gain_ms": f.get("recoverable_ms_per_step"),
            "share": f.get("recoverable_share_of_step"),
            "share_range": f.get("recoverable_share_range"),
            "location": f.get("location"),
        }
        for f in doc.get("findings", [])
    ]
    return out


def analyse(folder: Path, dest: Path) -> dict[str, Any]:
    result = analyze_path(folder)
    write(result.report, dest, "json")
    return summarise(json.loads(dest.read_text()))


def bare_copy(folder: Path, tmp: Path) -> Path:
    traces = sorted(folder.glob("*.pt.trace.json*"))
    if not traces:
        raise SystemExit(f"{folder}: no trace file")
    bare = tmp / folder.name
    bare.mkdir()
    shutil.copy(traces[0], bare / traces[0].name)
    return bare


def main() -> int:
    runs, outdir = Path(sys.argv[1]), Path(sys.argv[2])
    outdir.mkdir(parents=True, exist_ok=True)
    # the GPU machine's copy of the tree carries a stale .git: the caller names the commit there
    commit = (
        os.environ.get("IDLEHOUND_COMMIT")
        or subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    )
    registered: dict[str, Any] = {"commit": commit, "loops": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for loop_dir in sorted(p for p in runs.iterdir() if p.is_dir()):
            folders = sorted(f.parent for f in loop_dir.glob("*/run.json"))
            if not folders or not list(folders[-1].glob("*.pt.trace.json*")):
                print(f"{loop_dir.name}: no recorded window", file=sys.stderr)
                continue
            folder = folders[-1]
            name = loop_dir.name
            registered["loops"][name] = {
                "run_folder": folder.name,
                "with_run_json": analyse(folder, outdir / f"{name}.json"),
                "bare": analyse(bare_copy(folder, Path(tmp)), outdir / f"{name}.bare.json"),
            }
            print_loop(name, registered["loops"][name])
    (outdir / "registered.json").write_text(json.dumps(registered, indent=1) + "\n")
    if len(sys.argv) > 3:
        plan = make_plan(registered, json.loads(Path(sys.argv[3]).read_text()))
        (outdir / "plan.json").write_text(json.dumps(plan, indent=1) + "\n")
    return 0


def make_plan(registered: dict[str, Any], candidates: dict[str, Any]) -> dict[str, Any]:
    """The A/B plan: each loop's top two named fixes that have a variant, and its sync and loader variants."""
    plan: dict[str, Any] = {"rounds": candidates["rounds"], "causes": candidates["causes"], "loops": {}}
    for name, entry in registered["loops"].items():
        loop = candidates["loops"].get(name)
        if not loop:
            continue
        causes = {**candidates["causes"], **loop.get("causes", {})}
        top = [causes.get(f["cause"]) for f in entry["with_run_json"]["findings"][:2]]
        wanted = ["base", *[v for v in top if v], "sync", "loader"]
        chosen = {v: loop["variants"][v] for v in dict.fromkeys(wanted) if v in loop["variants"]}
        plan["loops"][name] = {"variants": chosen, "causes": loop.get("causes", {})}
        not_measured = [
            f["cause"] for f in entry["with_run_json"]["findings"][:2] if causes.get(f["cause"]) not in chosen
        ]
        if not_measured:
            plan["loops"][name]["not_measured"] = not_measured
    return plan


def print_loop(name: str, entry: dict[str, Any]) -> None:
    for mode in ("with_run_json", "bare"):
        s = entry[mode]
        named = ", ".join(
            f"{f['cause']} {100 * (f['share'] or 0):.1f}% [{', '.join(f'{100 * x:.1f}' for x in f['share_range'] or [])}]"
            for f in s["findings"]
        )
        print(
            f"{name:14s} {mode:13s} {s['correction']}: step {s['predicted_step_ms']} ms | {named or 'nothing named'}"
        )


if __name__ == "__main__":
    raise SystemExit(main())
