"""Ctrl-C into `idlehound run`'s start-up, and where each KeyboardInterrupt was raised.

    python benchmarks/stress_ctrl_c_startup.py [--trials 40] [--min-delay 0.7] [--max-delay 6.5] [--seed 2]

Each trial starts `idlehound run` on tests/scripts/faults/fault.py (trains until signalled) and sends SIGINT after
a uniform random delay; on this 2-core host torch's import runs about 0.8-2.6 s into the run and torch._dynamo's
(the script's first optimizer imports it) about 4-7 s. The child is `python -m idlehound` plus a probe that prints
the innermost frame the KeyboardInterrupt came from (handler frames left out), so a tally tells an interrupt
raised at idlehound's safe point (capture/_runner.py) or in the script's own code from one raised inside an
import (torch's, importlib's, the standard library's under it): there it can abort the process
(`pybind11::error_already_set`, exit -6) or be lost in an ImportError being built (`TypeError: expected a message
argument`, exit 1). Target: every trial exits 130, none raised inside an import (issue 31, item 9).
"""

from __future__ import annotations

import argparse
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "scripts" / "faults" / "fault.py"

PROBE = r"""
import runpy, sys
sys.argv = ["idlehound", *sys.argv[1:]]  # the CLI's own start-up handler, as `idlehound` installs it
import idlehound.app._capture as ac
import idlehound.capture._runner as cr

def where(e):
    frames, tb = [], e.__traceback__
    while tb is not None:
        frames.append(f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}")
        tb = tb.tb_next
    outer = [f for f in frames if "capture/_signals.py" not in f]
    return outer[-1] if outer else "?"

_capture, _signalled = ac.capture, cr._signalled

def capture(o):
    try:
        return _capture(o)
    except KeyboardInterrupt as e:
        sys.stderr.write(f"PROBE raised at {where(e)}\n")
        raise

def signalled(e):
    sys.stderr.write(f"PROBE raised at {where(e)}\n")
    return _signalled(e)

ac.capture, cr._signalled = capture, signalled
runpy.run_module("idlehound", run_name="__main__")
"""


def place(raised: str) -> str:
    """Where the interrupt was raised, in words."""
    if "idlehound/capture/_runner.py" in raised:  # `held.deliver()`, or the runner's own lines
        return "idlehound's safe point (capture/_runner.py)"
    if raised.startswith(str(SCRIPT)):
        return "the script's own code"
    return "inside an import (torch's, or the standard library's under it; an `import` line of idlehound's)"


def trial(delay: float, probe: Path) -> tuple[int, str, str]:
    with tempfile.TemporaryDirectory() as logdir:
        p = subprocess.Popen(
            [sys.executable, str(probe), "run", "--no-report", "--logdir", logdir, "--skip", "3"]
            + ["--warmup", "1", "--active", "3", str(SCRIPT), "run", "0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # not ignored under nohup
        )
        time.sleep(delay)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=300)
    lines = err.splitlines()
    raised = [line.split("at ", 1)[1] for line in lines if line.startswith("PROBE raised at ")]
    said = [line for line in lines if line.strip() and not line.startswith("PROBE")]
    tail = re.sub(r"/tmp/\S+", "RUN", said[-1][:100]) if said else ""
    if "terminate called" in err:
        tail = "terminate called (" + tail + ")"
    where = place(raised[0]) if raised else "not raised (the CLI's start-up handler, or none)"
    return p.returncode, tail, where


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--min-delay", type=float, default=0.7)
    ap.add_argument("--max-delay", type=float, default=6.5)
    ap.add_argument("--seed", type=int, default=2)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    outcomes: Counter = Counter()
    places: Counter = Counter()
    with tempfile.TemporaryDirectory() as d:
        probe = Path(d) / "probe.py"
        probe.write_text(PROBE)
        for _ in range(a.trials):
            code, tail, where = trial(rng.uniform(a.min_delay, a.max_delay), probe)
            outcomes[f"exit {code}: {tail}"] += 1
            places[where] += 1
    print(f"{a.trials} trials, SIGINT {a.min_delay:g}-{a.max_delay:g} s into `idlehound run` (seed {a.seed})")
    for k, v in outcomes.most_common():
        print(f"  {v:4d}  {k}")
    print("where the KeyboardInterrupt was raised:")
    for k, v in places.most_common():
        print(f"  {v:4d}  {k}")


if __name__ == "__main__":
    main()
