"""The recorded H200 run folders analysed as bare traces (run.json removed): does the printed range hold the
known answer, and is the first-named fix the one the run.json analysis names? (issue 30)

Known answers: the run's mean steady unprofiled step (run.json) for the predicted step's range, and the
interleaved A/B gain of each measured fix (tests/traces/replay/truths.json, tests/traces/frameworks_h200/
truths.json: the mean over rounds, and its 95% interval) for that fix's predicted range. The first-named fix is
compared on the folders whose run.json gives a fitted correction (elsewhere both analyses use the prior and are
the same by construction).

    PYTHONPATH=src python benchmarks/bare_traces.py
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
TRACES = ROOT / "tests" / "traces"
T975 = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 7: 2.45, 8: 2.36, 9: 2.31, 10: 2.26, 11: 2.23, 12: 2.20}

from idlehound.analysis import _observer as observer  # noqa: E402
from idlehound.diagnose._predict import gain_range  # noqa: E402
from idlehound.pipeline import analyze_path  # noqa: E402


def truths() -> dict[str, dict[str, tuple[float, float, float]]]:
    """folder -> fix -> (mean A/B gain, 95% low, 95% high)."""
    out: dict[str, dict[str, tuple[float, float, float]]] = {}
    for sub in ("replay", "frameworks_h200"):
        for loop, t in json.loads((TRACES / sub / "truths.json").read_text()).items():
            if loop.startswith("_"):
                continue
            for fix, rounds in t.items():
                if fix.startswith("base") or fix == "fix":
                    continue
                base = np.array(t.get(f"base_{fix}", t["base"]))
                g = 1 - np.array(rounds) / base[: len(rounds)] if len(rounds) <= base.size else None
                if g is None:
                    continue
                half = T975.get(g.size, 2.0) * g.std(ddof=1) / np.sqrt(g.size)
                out.setdefault(f"{sub}/{loop}", {})[fix] = (float(g.mean()), g.mean() - half, g.mean() + half)
    return out


def bare(folder: Path, tmp: Path, leave_out: bool):
    """The folder's trace files alone (no run.json, samples or sidecar: what a user without the run folder has),
    analysed with the prior (leave_out: the prior without this folder's own calibration value, as a trace nobody
    calibrated on would get it)."""
    d = tmp / folder.name
    d.mkdir()
    # the traces alone, as register_validation.bare_copy makes them
    for trace in folder.glob("*.pt.trace.json*"):
        shutil.copy(trace, d / trace.name)
    full = observer.prior_data()
    name = str(folder.relative_to(ROOT))
    loops = [x for x in full["loops"] if x["folder"] != name]
    if not leave_out or len(loops) == len(full["loops"]):
        return analyze_path(d)
    v = np.array([x["overhead_us"] for x in loops])
    spread = {"median": float(np.median(v)), "low": float(v.min()), "high": float(v.max())}
    observer.prior_data = lambda: {**full, "loops": loops, "overhead_us": spread}  # type: ignore[assignment]
    try:
        return analyze_path(d)
    finally:
        observer.prior_data = ORIGINAL


ORIGINAL = observer.prior_data


def first(res) -> str:
    return str(res.findings[0].cause) if res.findings and res.findings[0].kind != "risk" else "-"


def rows(leave_out: bool):
    """One dict per folder: the run.json and bare analyses' figures."""
    tr = truths()
    with tempfile.TemporaryDirectory() as tmp:
        for run in sorted(TRACES.glob("**/run.json")):
            folder = run.parent
            info = json.loads(run.read_text())
            if (info.get("environment") or {}).get("gpu") != "NVIDIA H200":
                continue
            name = str(folder.relative_to(TRACES))
            with_run, without = analyze_path(folder), bare(folder, Path(tmp), leave_out)
            a, b = with_run.analysis, without.analysis
            row = {
                "folder": name,
                "correction": a.observer["correction"],
                "bare_correction": b.observer["correction"],
                "unprofiled_ms": a.observer.get("unprofiled_ms"),
                "timing": a.observer.get("source") if "unprofiled_ms" in a.observer else None,
                "bare_step_range": b.observer["predicted_range_ms"],
                "first": first(with_run),
                "bare_first": first(without),
                "fixes": [],
            }
            for fix, (mean, lo, hi) in tr.get(name, {}).items():
                causes = fix.split("+")
                row["fixes"].append((fix, mean, lo, hi, gain_range(a, causes), gain_range(b, causes)))
            yield row


def main() -> int:
    for leave_out in (False, True):
        print(
            "\n== prior "
            + (
                "without the folder's own calibration value (leave-one-out)"
                if leave_out
                else "as shipped (in-sample: the folders are its calibration loops)"
            )
        )
        report(rows(leave_out))
    return 0


def report(rs) -> None:
    step_hits = first_hits = first_n = gain_mean_hits = gain_ci_hits = n_gain = run_gain_ci = n_step = 0
    for r in rs:
        lo, hi = r["bare_step_range"]
        un = r["unprofiled_ms"]
        usable = r["timing"] == "mean of steady steps"
        hit = usable and lo * 0.999 <= un <= hi * 1.001
        if un is None:  # the observer found no usable unprofiled timing in this run folder (a --watch run's)
            what = "no usable unprofiled timing in run.json"
        else:
            what = f"unprofiled {un:.2f} ({r['timing']}) {'in' if hit else 'OUT' if usable else 'not comparable'}"
        print(
            f"{r['folder']:34s} {r['correction'][:20]:20s} | bare step {lo:6.2f}-{hi:6.2f} ms, {what}; "
            f"first-named {r['first']} / bare {r['bare_first']}"
        )
        if usable:
            n_step += 1
            step_hits += hit
        if r["correction"] == "fitted on this run":
            first_n += 1
            first_hits += r["first"] == r["bare_first"]
        for fix, mean, alo, ahi, (rp, rlo, rhi), (bp, blo, bhi) in r["fixes"]:
            n_gain += 1
            in_mean = blo <= mean <= bhi
            overlap = blo <= ahi and alo <= bhi
            gain_mean_hits += in_mean
            gain_ci_hits += overlap
            run_gain_ci += rlo <= ahi and alo <= rhi
            print(
                f"    {fix:26s} A/B {100 * mean:5.1f}% [{100 * alo:5.1f}, {100 * ahi:5.1f}]  "
                f"run.json {100 * rp:5.1f}% ({100 * rlo:5.1f}-{100 * rhi:5.1f})  "
                f"bare {100 * bp:5.1f}% ({100 * blo:5.1f}-{100 * bhi:5.1f}) "
                f"{'holds the mean' if in_mean else 'overlaps' if overlap else 'MISS'}"
            )
    print(f"bare step range holds the mean steady unprofiled step (run.json): {step_hits}/{n_step}")
    print(
        f"bare gain range holds the A/B mean: {gain_mean_hits}/{n_gain}; "
        f"overlaps its 95% interval: {gain_ci_hits}/{n_gain}"
    )
    print(f"run.json gain range overlaps the A/B 95% interval: {run_gain_ci}/{n_gain}")
    print(f"first-named fix the same bare as with a fitted run.json: {first_hits}/{first_n}")


if __name__ == "__main__":
    raise SystemExit(main())
