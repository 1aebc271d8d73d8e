"""H200 validation of the replay (issue 16): record each loop under `idlehound run`, then measure the truth of
each fix without the profiler (interleaved A/B, CUDA-event step times after warm-up).

Run from a folder holding src/ and tests/scripts/replay/ (and _common.py beside this file): `python3 replay_h200.py
OUTDIR [names...]`.
Writes OUTDIR/<name>.tar.gz (the run folder), OUTDIR/truths.json and OUTDIR/log.txt.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import archive_newest, log, profiled_run

HERE = Path(__file__).resolve().parent
ROOT = HERE if (HERE / "src").exists() else HERE.parents[1]
SCRIPTS = ROOT / "tests" / "scripts" / "replay"
# name: (skip, active, total steps of the profiled run, seconds allowed for the truth)
LOOPS = {
    "tiny_host": (20, 5, 50, 60),
    "micro_item": (10, 4, 28, 90),
    "hf_gpt2": (15, 5, 36, 120),
    "lightning_bar": (15, 5, 36, 120),
    "data_bound": (10, 5, 26, 90),
    "burst_loader": (24, 8, 48, 120),
}


DEADLINE = time.time() + float(os.environ.get("REPLAY_BUDGET_S", "560"))


def run(cmd: list[str], timeout: float, env: dict) -> tuple[int, str]:
    timeout = min(timeout, DEADLINE - time.time())
    if timeout < 10:
        return 124, "no time left"
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=SCRIPTS)
        return p.returncode, p.stdout[-4000:] + p.stderr[-4000:]
    except subprocess.TimeoutExpired as e:
        return 124, f"timeout after {timeout}s: {(e.stdout or '')[-2000:]}"


def rebased(new: dict) -> dict:
    """A re-measurement of some fixes keeps its own base as base_<fix>: the earlier fixes keep the base of
    their own interleaved rounds."""
    base = new.pop("base")
    return {**new, **{f"base_{fix}": base for fix in new}}


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    names = sys.argv[2:] or list(LOOPS)
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": f"{ROOT / 'src'}:{SCRIPTS}:{os.environ.get('PYTHONPATH', '')}",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_OFFLINE": "1",
    }
    truths_path = out / "truths.json"
    truths = json.loads(truths_path.read_text()) if truths_path.exists() else {}
    runs = Path("/tmp/replay_runs")
    for name in names:
        skip, active, total, t_truth = LOOPS[name]
        t_truth = float(os.environ.get("TRUTH_S", t_truth))
        t0 = time.time()
        if os.environ.get("TRUTH_ONLY"):  # a re-measurement of truths: the recorded run folders stay
            rc, text = run([sys.executable, str(SCRIPTS / f"{name}.py"), "0", "truth"], t_truth, env)
            line = next((ln for ln in text.splitlines() if ln.startswith("TRUTH ")), None)
            log(out, f"{name}: truth rc={rc} {time.time() - t0:.0f}s {line or text[-1500:]}")
            if line:
                truths[name] = {**truths.get(name, {}), **rebased(json.loads(line[6:]))}
                truths_path.write_text(json.dumps(truths, indent=1))
            continue
        cmd = profiled_run(runs / name, name, skip, active, SCRIPTS / f"{name}.py", str(total))
        rc, text = run(cmd, 120, env)
        log(out, f"{name}: profiled rc={rc} {time.time() - t0:.0f}s\n{text[-1500:] if rc else ''}")
        archive_newest(runs / name, out / f"{name}.tar.gz", name)
        t0 = time.time()
        rc, text = run([sys.executable, str(SCRIPTS / f"{name}.py"), "0", "truth"], t_truth, env)
        line = next((ln for ln in text.splitlines() if ln.startswith("TRUTH ")), None)
        log(out, f"{name}: truth rc={rc} {time.time() - t0:.0f}s {line or text[-1500:]}")
        if line:
            truths[name] = json.loads(line[6:])
            truths_path.write_text(json.dumps(truths, indent=1))


if __name__ == "__main__":
    main()
