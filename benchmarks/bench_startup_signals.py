"""Ctrl-C and SIGTERM at random moments of a real `idlehound run` start-up (fresh interpreter, torch imported).

    python benchmarks/bench_startup_signals.py [--trials 24] [--max-delay 4] [--seed 1] [--cli-only]

Each trial starts `python -m idlehound run` on a script that trains until signalled, sends the signal after a
uniform random delay in [0, max-delay] s (most land while torch is imported and the session starts), and prints
the tally: exit codes, click's "Aborted!", tracebacks, run.json states. Target: every SIGINT ends 130 (or -2 while
python itself starts), every SIGTERM 143 (or -15 before idlehound's handler is installed), no "Aborted!", no
traceback, no run.json left at "running".

A second part sends SIGINT during plain CLI start-up (`python -m idlehound analyze` and the `idlehound` console
script, whose imports run before main() can catch anything), at a uniform random delay within that start-up.
Target: exit 130 with one line, or an interruption of Python's own start-up (before idlehound's first line runs;
tallied apart), never a traceback through idlehound's code.

    python benchmarks/bench_startup_signals.py --sigterm-save [SECONDS ...]

SIGTERM after SECONDS of a window still recording (default budgets): seconds from the signal to the run folder
saved (run.json "done") and to the exit. Target <= 10 s (Slurm's KillWait is 30 s).
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "tests" / "scripts" / "faults" / "fault.py"


def trial(sig: int, delay: float, logdir: Path) -> dict:
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "idlehound",
            "run",
            "--logdir",
            str(logdir),
            "--skip",
            "3",
            "--warmup",
            "1",
            "--active",
            "3",
            str(SCRIPT),
            "run",
            "0",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(delay)
    p.send_signal(sig)
    _, err = p.communicate(timeout=300)
    states = [json.loads(f.read_text()).get("status") for f in logdir.glob("*/run.json")]
    return {
        "code": p.returncode,
        "aborted": "Aborted!" in err,
        "traceback": "Traceback" in err,
        "run_json": states[0] if states else "none",
    }


def cli_trial(cmd: list[str], delay: float) -> dict:
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=300)
    ours = any(
        line.strip().startswith("File ") and "idlehound" in line and "/bin/idlehound" not in line
        for line in err.splitlines()
    )
    return {"code": p.returncode, "traceback": "Traceback" in err, "idlehound_traceback": ours}


def cli_start_up(trials: int, rng: random.Random) -> None:
    trace = Path(__file__).resolve().parents[1] / "tests" / "traces" / "demo"
    cmds = {"python -m idlehound": [sys.executable, "-m", "idlehound", "analyze", str(trace)]}
    script = Path(sys.executable).parent / "idlehound"
    if script.exists():
        cmds["console script"] = [str(script), "analyze", str(trace)]
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "idlehound", "--version"], capture_output=True)
    start = time.perf_counter() - t0
    for label, cmd in cmds.items():
        tally: Counter = Counter()
        for _ in range(trials):
            r = cli_trial(cmd, rng.uniform(0, start))
            tally[f"exit {r['code']}"] += 1
            tally["traceback (python start-up)"] += r["traceback"] and not r["idlehound_traceback"]
            tally["traceback through idlehound"] += r["idlehound_traceback"]
        print(
            f"SIGINT in {label} start-up ({start:.2f} s): {trials} trials: "
            + ", ".join(f"{k}: {v}" for k, v in sorted(tally.items()))
        )


def sigterm_save(record_s: float, logdir: Path) -> dict:
    """SIGTERM after record_s seconds of a window that would go on recording (the default budgets, a window
    longer than the run): seconds from the signal to run.json "done" (the folder saved) and to the exit."""
    script = logdir / "train.py"
    script.write_text(SCRIPT.read_text().replace("> 30:", "> 600:"))  # trains until signalled
    cmd = [sys.executable, "-m", "idlehound", "run", "--logdir", str(logdir), "--skip", "3", "--warmup", "1"]
    p = subprocess.Popen(
        [*cmd, "--active", "1000000", str(script), "run", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stderr is not None
    for line in p.stderr:  # the window has begun
        if "profiling step" in line:
            break
    time.sleep(record_s)
    sent = time.monotonic()
    p.send_signal(signal.SIGTERM)
    saved = None
    while p.poll() is None:
        if saved is None and _run_json_done(logdir):
            saved = time.monotonic() - sent
        time.sleep(0.05)
    exited = time.monotonic() - sent
    err = p.stderr.read()
    traces = [f for f in logdir.glob("*/*.pt.trace.json*")]
    info = json.loads(next(logdir.glob("*/run.json")).read_text())
    return {
        "code": p.returncode,
        "saved_s": saved if saved is not None else exited,
        "exit_s": exited,
        "steps": (info.get("window") or {}).get("steps_recorded"),
        "mb": sum(f.stat().st_size for f in traces) / 2**20,
        "said_later": "not analysed now" in err,
    }


def _run_json_done(logdir: Path) -> bool:
    for f in logdir.glob("*/run.json"):
        try:
            return json.loads(f.read_text()).get("status") == "done"
        except ValueError:  # being written
            return False
    return False


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=24)
    ap.add_argument("--max-delay", type=float, default=4.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cli-only", action="store_true", help="only the plain CLI start-up part")
    ap.add_argument(
        "--sigterm-save",
        type=float,
        nargs="*",
        metavar="SECONDS",
        help="only: SIGTERM after this many seconds of recording; time to the saved run folder (target <= 10 s)",
    )
    a = ap.parse_args()
    if a.sigterm_save is not None:
        for record_s in a.sigterm_save or [10.0, 20.0]:
            with tempfile.TemporaryDirectory() as d:
                r = sigterm_save(record_s, Path(d))
            print(
                f"SIGTERM after {record_s:g} s of recording: {r['steps']} steps, trace {r['mb']:.1f} MB: "
                f"run folder saved in {r['saved_s']:.1f} s, exit {r['code']} after {r['exit_s']:.1f} s"
                + ("; says the analysis is left for later" if r["said_later"] else "")
            )
        return
    rng = random.Random(a.seed)
    cli_start_up(a.trials, rng)
    if a.cli_only:
        return
    for sig in (signal.SIGINT, signal.SIGTERM):
        tally: Counter = Counter()
        for _ in range(a.trials):
            with tempfile.TemporaryDirectory() as d:
                r = trial(sig, rng.uniform(0, a.max_delay), Path(d))
            tally[f"exit {r['code']}"] += 1
            tally[f"run.json {r['run_json']}"] += 1
            tally["Aborted!"] += r["aborted"]
            tally["traceback"] += r["traceback"]
        print(f"{sig.name}: {a.trials} trials: " + ", ".join(f"{k}: {v}" for k, v in sorted(tally.items())))


if __name__ == "__main__":
    main()
