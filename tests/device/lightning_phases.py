"""Where the unprofiled step of tests/scripts/replay/lightning_bar.py goes, per variant: host wall time between
Lightning's hooks (no sync: the GPU is busy ~2 ms of a ~22 ms step, so the host sets the pace), interleaved
rounds. Checks the replay's split of the profiled step (docs/measurements/replay-h200.md, the Lightning miss).

    python3 tests/device/lightning_phases.py [ROUNDS] [VARIANTS]   (default 3, base,launch_bound,data_loading)
"""

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "replay"))

import lightning as L  # noqa: E402
import lightning_bar as lb  # noqa: E402
from _common import StepTimer  # noqa: E402

WARM, STEPS = 10, 40
HOOKS = ("on_train_batch_start", "on_before_backward", "on_after_backward", "on_before_optimizer_step")


class Phases(L.Callback):
    """Marks each hook's wall time; on_train_batch_end closes the step."""

    def __init__(self, on_step):
        self.on_step, self.marks = on_step, []
        self.row: dict = {}
        for h in HOOKS:
            setattr(self, h, self._mark(h))

    def _mark(self, name):
        def hook(*a, **k):
            self.row[name] = time.perf_counter()

        return hook

    def on_train_batch_end(self, *a, **k):
        self.row["end"] = time.perf_counter()
        self.marks.append(self.row)
        self.row = {}
        self.on_step()


def one(variant: str) -> dict:
    made = []

    def make(on_step):
        made.append(Phases(on_step))
        return made[-1]

    lb._Step = make
    timer = StepTimer()
    lb.train(WARM + STEPS + 1, timer, variant)
    rows = made[0].marks[WARM:]
    parts = {
        "loader+loop": [b["on_train_batch_start"] - a["end"] for a, b in zip(rows, rows[1:])],
        "forward+log": [r["on_before_backward"] - r["on_train_batch_start"] for r in rows],
        "backward": [r["on_after_backward"] - r["on_before_backward"] for r in rows],
        "after_backward": [r["on_before_optimizer_step"] - r["on_after_backward"] for r in rows],
        "optimizer+end": [r["end"] - r["on_before_optimizer_step"] for r in rows],
    }
    out = {k: round(1e3 * statistics.fmean(v), 3) for k, v in parts.items()}
    out["step (CUDA events)"] = round(statistics.fmean(timer.step_ms(WARM)), 3)
    return out


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    variants = (sys.argv[2] if len(sys.argv) > 2 else "base,launch_bound,data_loading").split(",")
    res: dict = {v: [] for v in variants}
    for r in range(rounds):
        for v in variants:
            res[v].append(one(v))
            print(r, v, json.dumps(res[v][-1]), flush=True)
    means = {
        v: {k: round(statistics.fmean(x[k] for x in rows), 3) for k in rows[0]} for v, rows in res.items()
    }
    print("PHASES " + json.dumps({"rounds": res, "means": means}), flush=True)


if __name__ == "__main__":
    main()
