"""The lab: runs the children of one tune, checks each variant's losses once, and turns the runs into outcomes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Optional

from ._candidates import Candidate, Outcome
from ._losses import check_losses, run_noise
from ._options import Progress, TuneOptions
from ._predict import Predictor
from ._runner import Runner, failure, run_child
from ._stack import Stack
from ._stats import (
    Interval,
    Run,
    Schedule,
    drift_pct,
    effect,
    interval,
    log_ratios,
    mean_ms,
    measure_interleaved,
)


class Lab:
    """Runs the children of one tune and keeps every run in schedule order, for the intervals and the drift.
    runner starts one child (_runner.run_child); clock times the runs, for the --budget."""

    def __init__(
        self,
        script: str,
        args: list[str],
        opts: TuneOptions,
        run_dir: Path,
        cuda: bool,
        progress: Progress,
        runner: Runner = run_child,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.script, self.args, self.opts, self.run_dir, self.cuda = script, args, opts, run_dir, cuda
        self.progress, self.runner, self.clock = progress, runner, clock
        self.runs: list[Run] = []
        self.results: dict[str, list[dict[str, Any]]] = {}
        self.settings: dict[str, dict[str, Any]] = {"baseline": {}}
        self.math: dict[str, str] = {}
        self.labels: dict[str, str] = {"baseline": "baseline"}
        self.checks: dict[str, tuple[bool, Optional[float], str]] = {}
        self.intervals: dict[str, Interval] = {}  # speed-up over the baseline, per arm
        self.predicted: dict[str, Optional[float]] = {}  # the replay's speed-up over the arm's reference
        self.done, self.total = 0, 0
        self.sched = Schedule(opts.min_rounds, opts.max_rounds, seed=opts.seed)
        self.predictor = Predictor(None)
        self.run_s: list[float] = []  # wall time of each child run, for the budget
        self.run_s_by: dict[str, list[float]] = {}  # the same per arm
        self.held_back = False  # the --budget stopped the rounds to keep room for later candidates
        self.timing: list[str] = []  # the arms of the experiment under way

    def predicted_now(self) -> list[Optional[float]]:
        """The replay's speed-ups for the arms now timed."""
        return [self.predicted.get(n) for n in self.timing]

    def plan(self, arms: int, later: int) -> None:
        """Runs expected from here: this experiment's minimum, and that of the single-arm ones still to come."""
        rounds = self.sched.early_rounds or self.sched.min_rounds
        self.total = self.done + (rounds * (arms + 1) + 1 if arms else 0) + later * (2 * rounds + 1) + 1

    def first_baseline(self) -> dict[str, Any]:
        """The unmodified script twice before any variant: the second run gives the run-to-run loss noise the
        loss checks on CUDA allow for (it also counts as the first round's reference)."""
        self.runs.append(Run("baseline", 0, self._measure("baseline", 0, 0)))
        if self.results["baseline"][0]["status"] == "ok":
            self.runs.append(Run("baseline", 1, self._measure("baseline", 1, 1)))
        return self.results["baseline"][0]

    def last_baseline(self) -> None:
        """The baseline once more at the very end, so the drift across the whole tune is measured."""
        if self.runs and self.runs[-1].arm != "baseline":
            pos = self.runs[-1].position + 1
            self.runs.append(
                Run("baseline", pos, self._measure("baseline", len(self.results["baseline"]), pos))
            )

    def experiment(
        self,
        stack: Optional[Stack],
        cands: list[Candidate],
        note: str = "",
        names: Optional[list[str]] = None,
    ) -> list[Outcome]:
        """Time cands (each on top of stack) interleaved with the stack's own run (the baseline when empty)."""
        if not cands:
            return []
        ref = stack.outcome.candidate if stack and stack.outcome else "baseline"
        names = names or [c.name for c in cands]
        below = stack.fixes if stack else ()
        for cand, name in zip(cands, names):
            settings, math = stack.plus(cand) if stack else (cand.settings, cand.math)
            self.settings[name], self.math[name], self.labels[name] = settings, math, cand.label + note
            self.predicted[name] = self.predictor.speedup(cand.fixes, below)
        self.held_back = False
        self.timing = names
        measure_interleaved(ref, names, self._measure, self.sched, self.runs)
        return [self.outcome(n, ref, stack) for n in names]

    def _measure(self, arm: str, i: int, pos: int) -> Optional[float]:
        what = "baseline" if arm == "baseline" else self.labels.get(arm, arm)
        self.total = max(self.total, self.done + 2)  # a loose interval adds rounds beyond the plan
        self.progress(f"{what} (run {i + 1})", self.done, self.total)
        n = len(self.results.get(arm, []))
        t0 = self.clock()
        r = self.runner(
            self.script, self.args, self.settings[arm], self.opts, self.run_dir / f"{arm}.{n}.json"
        )
        self.run_s.append(self.clock() - t0)
        self.run_s_by.setdefault(arm, []).append(self.run_s[-1])
        self.results.setdefault(arm, []).append(r)
        self.done += 1
        if r["status"] != "ok":
            return None
        if arm != "baseline" and n == 0:  # checked once: the same seeds give the same losses on every run
            self.checks[arm] = check_losses(
                self.results["baseline"][0]["losses"],
                r["losses"],
                self.math[arm],
                self.cuda,
                self.noise()["loss_rel_diff"],
            )
            if not self.checks[arm][0]:
                return None  # rejected: not timed again
        return r.get("ms_per_step")

    def outcome(self, name: str, ref: str, stack: Optional[Stack]) -> Outcome:
        """The arm's outcome: failed, rejected by its loss check, or its figures over ref and the baseline."""
        on_top = stack.outcome if stack else None
        o = Outcome(
            name,
            self.labels[name],
            settings=self.settings[name],
            on_top_of=stack.name if stack and on_top is not None else None,
            predicted=self.predicted.get(name),
        )
        results = self.results.get(name, [])
        failed = next((r for r in results if r["status"] != "ok"), None)
        if failed is not None:
            o.status, o.reason = "failed", failure(failed)
            return o
        o.loss_check = self.checks[name][2] if name in self.checks else ""
        o.max_rel_diff = self.checks[name][1] if name in self.checks else None
        if name in self.checks and not self.checks[name][0]:
            o.status, o.reason = "rejected", o.loss_check
            return o
        self._timed(o, ref, on_top, results)
        return o

    def _timed(self, o: Outcome, ref: str, on_top: Optional[Outcome], results: list[dict[str, Any]]) -> None:
        """The figures of an arm that ran and kept the math: its throughput, its interval over ref (the gain,
        on top of a stack) and over the baseline (the speed-up, through the stack's own interval)."""
        name = o.candidate
        _fill(o, self.runs, name, results)
        iv = interval(log_ratios(self.runs, ref, name))
        if o.rounds < self.sched.min_rounds:
            o.reason = self._cut(name, o.rounds)
        o.effect = effect(iv)
        if on_top is not None:
            o.gain, o.gain_ci = _figures(iv)
            below = self.intervals.get(on_top.candidate)
            iv = below.times(iv) if iv and below else None
        o.speedup, o.speedup_ci = _figures(iv)
        if iv is not None:
            self.intervals[name] = iv
        o.graphed_inputs = results[0].get("graphed_inputs")
        o.warmup_note = results[0].get("warmup_note", "")

    def _cut(self, name: str, rounds: int) -> str:
        """Why an arm has fewer than --min-rounds rounds (under --budget)."""
        of = f"{rounds} of {self.sched.min_rounds} rounds"
        if name in self.sched.left_early:
            return f"decided after {of}: its 95% interval was clear of the margin"
        if self.held_back:
            return f"stopped after {of}: the rest of the --budget is kept for the candidates predicted to gain more"
        return f"the --budget ran out after {of}"

    def baseline_outcome(self) -> Outcome:
        o = Outcome("baseline", "the script as written", settings={}, loss_check="reference", speedup=1.0)
        _fill(o, self.runs, "baseline", self.results["baseline"])
        return o

    def noise(self) -> dict[str, Optional[float]]:
        ok = [r for r in self.results.get("baseline", []) if r["status"] == "ok"]
        return run_noise(ok[0], ok[1]) if len(ok) > 1 else {"time_pct": None, "loss_rel_diff": None}

    def drift(self) -> Optional[float]:
        return drift_pct(self.runs, "baseline")


def _fill(o: Outcome, runs: list[Run], name: str, results: list[dict[str, Any]]) -> None:
    """Throughput (geometric mean of the arm's runs), GPU busy and the number of timed runs."""
    ms = mean_ms(runs, name)
    o.rounds = sum(1 for r in runs if r.arm == name and r.ms)
    utils = [r["gpu_util"] for r in results if r.get("gpu_util") is not None]
    o.gpu_util = round(sum(utils) / len(utils), 1) if utils else None
    if ms:
        o.steps_per_s = round(1e3 / ms, 2)
        bs = (results[0].get("loaders") or [{}])[0].get("batch_size")
        o.samples_per_s = round(bs * 1e3 / ms, 1) if bs else None


def _figures(iv: Optional[Interval]) -> tuple[Optional[float], Optional[list[float]]]:
    if iv is None:
        return None, None
    ci = [round(iv.low, 3), round(iv.high, 3)] if iv.df > 0 else None
    return round(iv.estimate, 3), ci
