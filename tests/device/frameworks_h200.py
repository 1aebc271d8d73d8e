"""H200 check of issue 18: the framework-level syncs of the HF and Lightning Trainers.

(a) records each Trainer under `idlehound run` and runs `idlehound analyze --json` on the run folder: the
finding should name the library line and the framework setting; (b) measures the table's fix without the
profiler (interleaved A/B, CUDA-event step times after warm-up, FW_ROUNDS rounds).

Run from the repository root: `python3 tests/device/frameworks_h200.py OUTDIR` (about 7 minutes on an H200).
Writes OUTDIR/{hf,lightning}.tar.gz (run folders), OUTDIR/{hf,lightning}.analyze.json and .report.txt (the
terminal report), OUTDIR/results.json and OUTDIR/log.txt (8 files). FW_TINY=1 runs the same steps with tiny models on a CPU (a check of this script).
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import archive_newest, log, profiled_run

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "tests" / "scripts" / "frameworks"
TINY = os.environ.get("FW_TINY") == "1"
ROUNDS = int(os.environ.get("FW_ROUNDS", "2" if TINY else "6"))
# name: (script, skip, active, steps of the profiled run, seconds allowed: record, A/B)
RUNS = {
    "hf": ("gpu_hf.py", 3 if TINY else 15, 2 if TINY else 5, 8 if TINY else 30, 240, 200),
    "lightning": ("gpu_lightning.py", 3 if TINY else 15, 2 if TINY else 5, 8 if TINY else 30, 240, 200),
}
DEADLINE = time.time() + float(os.environ.get("FW_BUDGET_S", "900" if TINY else "420"))


def run(cmd: list[str], timeout: float, env: dict) -> tuple[int, str, str]:
    timeout = min(timeout, DEADLINE - time.time())
    if timeout < 10:
        return 124, "", "no time left"
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=SCRIPTS)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        return 124, "", f"timeout after {timeout:.0f}s: {str(e.stdout or '')[-2000:]}"


def framework_check(doc: dict) -> list[dict]:
    """What each finding says about a framework: entry, library line (exact or not), the user line, the code."""
    out = []
    for f in doc.get("findings", []):
        for m in (f.get("details") or {}).get("framework", []):
            lib, user = m.get("library") or {}, m.get("user") or {}
            out.append(
                {
                    "finding": f.get("cause"),
                    "kind": f.get("kind"),
                    "entry": m.get("entry"),
                    "library": f"{lib.get('file')}:{lib.get('line')}",
                    "library_exact": lib.get("exact"),
                    "library_source": lib.get("source"),
                    "blocking": _line(m.get("blocking")),
                    "user": f"{user.get('file')}:{user.get('line')}",
                    "count_per_step": m.get("count_per_step"),
                    "finding_code": f.get("code"),
                    "recoverable_share": f.get("recoverable_share_of_step"),
                }
            )
    return out


def _line(loc: dict | None) -> str | None:
    return f"{loc.get('file')}:{loc.get('line')} {loc.get('source') or ''}".strip() if loc else None


def record(name: str, out: Path, env: dict, runs: Path, results: dict) -> None:
    script, skip, active, steps, t_rec, _ = RUNS[name]
    t0 = time.time()
    cmd = profiled_run(runs / name, name, skip, active, SCRIPTS / script, "record", str(steps))
    rc, so, se = run(cmd, t_rec, env)
    log(out, f"{name}: profiled rc={rc} {time.time() - t0:.0f}s" + (f"\n{(so + se)[-2500:]}" if rc else ""))
    folder = archive_newest(runs / name, out / f"{name}.tar.gz", name)
    if folder is None:
        return
    rc, so, se = run([sys.executable, "-m", "idlehound", "analyze", "--json", str(folder)], 120, env)
    (out / f"{name}.analyze.json").write_text(so if so.strip() else se)
    rc_text, text, err = run(
        [sys.executable, "-m", "idlehound", "analyze", str(folder)], 120, {**env, "COLUMNS": "120"}
    )
    (out / f"{name}.report.txt").write_text(text + err)
    try:
        doc = json.loads(so)
    except ValueError:
        log(out, f"{name}: analyze rc={rc}, no JSON: {se[-1500:]}")
        return
    m = doc.get("metrics", {})
    results[name] = {
        "analyze_rc": rc,
        "findings": [
            (f.get("cause"), f.get("title"), f.get("recoverable_share_of_step"))
            for f in doc.get("findings", [])
        ],
        "framework": framework_check(doc),
        "gpu_util": (m.get("gpu_util") or {}).get("value"),
        "step_ms": (m.get("step_ms") or {}).get("value"),
    }
    log(out, f"{name}: analyze rc={rc} {json.dumps(results[name])}")


def measure(name: str, out: Path, env: dict, results: dict) -> None:
    script, *_, t_ab = RUNS[name]
    t0 = time.time()
    rc, so, se = run([sys.executable, str(SCRIPTS / script), "ab", str(ROUNDS)], t_ab, env)
    line = next((ln for ln in so.splitlines() if ln.startswith("AB ")), None)
    log(out, f"{name}: A/B rc={rc} {time.time() - t0:.0f}s {line or (so + se)[-2500:]}")
    if line:
        rounds = json.loads(line[3:])
        means = {v: sum(x) / len(x) for v, x in rounds.items()}
        results.setdefault(name, {})["ab_ms_per_round"] = rounds
        results[name]["ab_mean_ms"] = means
        results[name]["ab_gain_pct"] = {
            v: 100 * (means["base"] - x) / means["base"] for v, x in means.items() if v != "base"
        }


def missing() -> list[str]:
    """What this machine lacks for the check: idlehound's own dependencies, the two frameworks, a GPU."""
    import importlib.util

    need = ["msgspec", "numpy", "rich", "click", "jinja2", "torch", "transformers", "lightning"]
    out = [m for m in need if importlib.util.find_spec(m) is None]
    if not out and not TINY:
        import torch

        out += [] if torch.cuda.is_available() else ["a CUDA GPU (FW_TINY=1 checks the script on a CPU)"]
    return out


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    lacking = missing()
    if lacking:
        log(out, f"cannot run: missing {', '.join(lacking)} (python {sys.executable})")
        sys.exit(2)
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": f"{ROOT / 'src'}:{os.environ.get('PYTHONPATH', '')}",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    results: dict = {"tiny": TINY, "rounds": ROUNDS}
    with tempfile.TemporaryDirectory() as tmp:
        for name in RUNS:
            record(name, out, env, Path(tmp), results)
            (out / "results.json").write_text(json.dumps(results, indent=1))
    for name in RUNS:
        measure(name, out, env, results)
        (out / "results.json").write_text(json.dumps(results, indent=1))
    print("RESULTS " + json.dumps(results), flush=True)


if __name__ == "__main__":
    main()
