"""`idlehound tune`: apply the fixes to an unmodified script, measure each side by side, check the math.

Every variant runs in its own process (no cudnn cache, compiled code or worker processes leak between them),
with the same seeds, for the same number of steps after the same warm-up, in rounds interleaved with its
reference (_stats): a speed-up comes with a 95% interval, and only one whose interval clears 1.0 by the margin is
accepted. Each variant's per-step losses are compared with the baseline's: exactly (changes that must not alter
the math, such as loader workers) or within a tolerance (precision changes). Crashing variants fail and variants
that change the math are rejected, with the reason; candidates that would change nothing are not applicable.
"""

from __future__ import annotations

import json
import math as _math
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Optional

from ..diagnose.dataloader import suggested_workers
from ..errors import IdlehoundError
from ..report.model import encode
from ..settings import TUNE_LAUNCHED, TUNE_SCRIPT_DIR
from ._candidates import (
    FRAMEWORK_FACTS,
    Candidate,
    Outcome,
    all_candidates,
    not_applicable,
    refine_workers,
    workers_candidate,
)
from ._diff import changed_source, make_diff
from ._predict import Predictor
from ._stats import (
    MARGIN,
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
from .report import render_tune, tune_html, tune_markdown

# Precision changes: a different rounding makes two training runs drift apart step by step, so the check is on
# the smoothed curve: the mean of the last SMOOTH losses within 10% (+ 0.02) of the baseline's, at every step.
RTOL, ATOL, SMOOTH = 0.10, 0.02, 10
SAME_RTOL_CUDA = 1e-5  # GPU reductions may reorder between runs; on the CPU "same" means bitwise equal


@dataclass
class TuneOptions:
    steps: int = 100
    skip: int = 20
    try_: list[str] = field(default_factory=list)
    skip_candidates: list[str] = field(default_factory=list)
    logdir: Path = Path("log")
    diagnose: bool = True
    timeout_s: int = 900  # per child process (--child-timeout)
    min_rounds: int = 3
    max_rounds: int = 5
    seed: int = 0
    budget_s: Optional[float] = (
        None  # wall time for the whole tune: candidates that would not fit are not tried
    )


Progress = Callable[[str, int, int], None]  # (what runs now, runs done, runs planned; 0 while not yet known)


def print_progress(message: str, done: int, total: int) -> None:
    """One line per child run, counted "run 3 of ~12" (the plan grows when an interval needs more rounds);
    the steps between runs (diagnosing, checking the diff) without a count."""
    if total and done >= total:
        return
    if not _RUN_MESSAGE.search(message):
        sys.stderr.write(f"idlehound tune: {message}\n")
        return
    count = f"run {done + 1}" + (f" of ~{total}" if total else "")
    sys.stderr.write(f"idlehound tune: [{count}] {message}\n")


_RUN_MESSAGE = re.compile(r"\(run \d+\)$")  # what _Lab._measure says as each child run starts


def run_tune(
    script: str, args: list[str], opts: TuneOptions, progress: Progress = print_progress
) -> dict[str, Any]:
    """Tune script; returns the tune document (schema idlehound/tune, version 3) and writes it to a run folder.

    Stage 1 times the loader candidates on the script as written. Stage 2 times the others one at a time on top
    of a stack that starts as the best loader setting, because a change that makes the GPU faster cannot show
    while it waits for data or for the host: each one measurably faster than the stack joins it, so the last to
    join was measured with everything kept, and that run is the combination. Every comparison interleaves the
    arms with their reference in rounds (_stats) and reports a 95% interval.
    """
    from ..runfolder import document_files, new_run_dir

    if not Path(script).is_file():
        raise IdlehoundError(f"{script}: no such script")
    import torch

    cuda = torch.cuda.is_available()
    run_dir = new_run_dir(Path(opts.logdir), f"tune-{Path(script).stem}")
    lab = _Lab(script, args, opts, run_dir, cuda, progress)
    clock = _Budget(opts.budget_s, lab)
    progress(f"baseline ({opts.skip} warm-up + {opts.steps} timed steps)", 0, 0)
    first = lab.first_baseline()
    if first["status"] != "ok":
        raise IdlehoundError(
            f"{script}: the unmodified script did not complete its warm-up and "
            f"{opts.steps} timed optimizer steps ({first['error'] or first['status']})"
        )
    causes: set[str] = set()
    if opts.diagnose:
        progress("diagnosing the baseline (short profile)", lab.done, 0)
        causes, lab.predictor = _diagnosed_causes(script, args, opts, run_dir)
    cands = all_candidates(os.cpu_count() or 2, cuda)
    chosen, skipped = _choose(cands, causes, first, cuda, opts)
    _predict_untried(skipped, cands, lab.predictor)
    stage1 = [c for c in chosen if c.needs_loader]
    stage1 = lab.predictor.ordered(
        _suggested_first(stage1) if opts.budget_s else stage1
    )  # a cut keeps the head
    below = stage1[0].fixes if stage1 else ()  # stage 2 runs on top of the loader, once one helps
    stage2 = lab.predictor.ordered([c for c in chosen if not c.needs_loader], below)
    lab.plan(len(stage1), len(stage2))
    clock.plan_later(stage2, below)
    outcomes = skipped + clock.experiment(None, stage1)
    floor = _best(stage1, outcomes)
    extra = _refined(stage1, floor, cuda) if opts.budget_s is None else []  # a budget goes to stage 2 first
    lab.plan(len(extra), len(stage2))
    outcomes += clock.experiment(None, extra, " (refining the sweep)")
    stage1 += extra
    stack = _Stack.start(_best(stage1, outcomes))
    for i, cand in enumerate(stage2):
        lab.plan(1, len(stage2) - i - 1)
        clock.plan_later(stage2[i + 1 :], tuple(f for c in (*stack.cands, cand) for f in c.fixes))
        stack = _on_top(clock, stack, cand, cand.name, outcomes)
    for cand in _more_workers(stack, stage1, cuda):
        lab.plan(1, 0)
        clock.later_pred = []
        stack = _on_top(clock, stack, cand, cand.name + "_on_stack", outcomes, " (again)")
    lab.last_baseline()
    progress("checking that the changed script runs", lab.done, lab.done + 1)
    doc = _document(
        script,
        opts,
        causes,
        [lab.baseline_outcome()] + outcomes,
        run_dir,
        lab.noise(),
        lab.drift(),
        lambda new: _runs_changed(script, args, opts, run_dir, new),
        lab.predictor.summary(),
    )
    doc["wall_s"] = round(time.monotonic() - clock.t0, 1)
    progress("done", lab.done + 1, lab.done + 1)
    json_file, md_file, html_file = document_files(run_dir, "tune")
    json_file.write_text(encode(doc))
    md_file.write_text(tune_markdown(doc))
    html_file.write_text(tune_html(doc), encoding="utf-8")
    return doc


class _Lab:
    """Runs the children of one tune and keeps every run in schedule order, for the intervals and the drift."""

    def __init__(
        self, script: str, args: list[str], opts: TuneOptions, run_dir: Path, cuda: bool, progress: Progress
    ) -> None:
        self.script, self.args, self.opts, self.run_dir, self.cuda = script, args, opts, run_dir, cuda
        self.progress = progress
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
        stack: Optional[_Stack],
        cands: list[Candidate],
        note: str = "",
        names: Optional[list[str]] = None,
    ) -> list[Outcome]:
        """Time cands (each on top of stack) interleaved with the stack's own run (the baseline when empty)."""
        if not cands:
            return []
        ref = stack.outcome.candidate if stack and stack.outcome else "baseline"
        names = names or [c.name for c in cands]
        below = tuple(f for c in (stack.cands if stack else ()) for f in c.fixes)
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
        t0 = time.monotonic()
        r = _run_child(
            self.script, self.args, self.settings[arm], self.opts, self.run_dir / f"{arm}.{n}.json"
        )
        self.run_s.append(time.monotonic() - t0)
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

    def outcome(self, name: str, ref: str, stack: Optional[_Stack]) -> Outcome:
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
            o.status, o.reason = "failed", _failure(failed)
            return o
        o.loss_check = self.checks[name][2] if name in self.checks else ""
        o.max_rel_diff = self.checks[name][1] if name in self.checks else None
        if name in self.checks and not self.checks[name][0]:
            o.status, o.reason = "rejected", o.loss_check
            return o
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
        return o

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
        return _noise(ok[0], ok[1]) if len(ok) > 1 else {"time_pct": None, "loss_rel_diff": None}

    def drift(self) -> Optional[float]:
        return drift_pct(self.runs, "baseline")


EARLY_ROUNDS = 2  # under --budget: the fewest rounds a candidate is tried with (an interval needs two)


class _Budget:
    """The lab's experiments within --budget, at what the runs so far cost (each reference at its own runs' mean
    wall time, a new arm at the mean of all runs).

    A candidate is tried when its fewest rounds (EARLY_ROUNDS: each arm twice, its reference around them), the
    closing reference run and what the end keeps back (the last baseline run when the reference is a stack, the
    changed script's short run) fit in what is left; a sweep that does not fit whole is cut to its most
    promising head. A decided arm leaves after those rounds (_stats.decided); a further round starts only while
    it leaves room for the fewest rounds of each later candidate the replay predicts to gain more than the
    margin, so that the candidates that matter get tried before the undecided ones get more rounds."""

    def __init__(self, budget_s: Optional[float], lab: _Lab) -> None:
        self.budget_s, self.lab, self.t0 = budget_s, lab, time.monotonic()
        self.ref = "baseline"
        # Predicted speed-ups of the later candidates that gain more than the margin: their fewest runs are kept.
        self.later_pred: list[float] = []
        if budget_s is not None:
            lab.sched.early_rounds = min(EARLY_ROUNDS, lab.sched.min_rounds)
            lab.sched.room = self.room

    def left(self) -> float:
        return _math.inf if self.budget_s is None else self.budget_s - (time.monotonic() - self.t0)

    def cost(self, arm: Optional[str] = None) -> float:
        """Mean wall time of arm's runs so far, or of all runs (a new arm)."""
        xs = (self.lab.run_s_by.get(arm) if arm else None) or self.lab.run_s
        return sum(xs) / len(xs) if xs else 0.0

    def kept_back(self) -> tuple[int, float]:
        """The runs the end needs: the last baseline run (when the reference is not the baseline: a stack), and
        the changed script's check (a short run: at the quickest run's cost)."""
        last = self.ref != "baseline"
        check = min(self.lab.run_s) if self.lab.run_s else 0.0
        return 1 + last, check + (self.cost("baseline") if last else 0.0)

    def need(self, arms: int, rounds: int) -> tuple[int, float]:
        """Runs and seconds to time `arms` new arms for `rounds` rounds against self.ref, the closing reference
        run included (the first round's reference is the run just made when that was the same reference)."""
        runs = self.lab.runs
        refs = rounds + 1 - (1 if runs and runs[-1].arm == self.ref else 0)
        return refs + arms * rounds, refs * self.cost(self.ref) + arms * rounds * self.cost()

    def plan_later(self, cands: list[Candidate], below: tuple[str, ...]) -> None:
        """Keep room for the fewest rounds of each of cands the replay predicts to gain more than the margin."""
        pred = [self.lab.predictor.speedup(c.fixes, below) for c in cands]
        self.later_pred = [p for p in pred if p is not None and p >= 1 + MARGIN]

    @property
    def later(self) -> int:
        """Later candidates predicted to gain more than the margin."""
        return len(self.later_pred)

    def ahead(self) -> int:
        """Later candidates a third round must leave room for: those predicted to gain more than the arms now
        timed. On the H200 HF tune (260 s) torch.compile (predicted +32%, 1.51x in two rounds, its interval
        0.76-2.99x) was stopped for four candidates predicted +18-19%, none of which then fitted: the tune
        ended undecided on its most promising candidate."""
        now = [p for p in self.lab.predicted_now() if p is not None]
        if not now:
            return self.later
        return sum(1 for p in self.later_pred if p > max(now))

    def room(self, runs: int, rnd: int) -> bool:
        """Whether the rest of the next round (its reference run has run: runs are those of the arms still timed
        and the closing reference run) fits, with the end's runs kept back; from the third round on, also the
        later candidates'."""
        need = self.cost(self.ref) + (runs - 1) * self.cost() + self.kept_back()[1]
        if rnd < (self.lab.sched.early_rounds or 0):
            return need <= self.left()
        later = self.ahead() * (2 * EARLY_ROUNDS + 1) * self.cost()
        if need <= self.left() < need + later:
            self.lab.held_back = True
        return need + later <= self.left()

    def experiment(
        self,
        stack: Optional[_Stack],
        cands: list[Candidate],
        note: str = "",
        names: Optional[list[str]] = None,
    ) -> list[Outcome]:
        names = names or [c.name for c in cands]
        self.ref = stack.outcome.candidate if stack and stack.outcome else "baseline"
        fit = len(cands) if self.budget_s is None else self._fitting(len(cands), self.left())
        done = self.lab.experiment(stack, cands[:fit], note, names[:fit]) if fit else []
        if fit == len(cands):
            return done
        rounds = self.lab.sched.early_rounds or self.lab.sched.min_rounds
        runs = self.need(len(cands) - fit, rounds)[0] + self.kept_back()[0]
        why = f"not tried: {runs} more runs would not fit the --budget of {self.budget_s:g} s"
        below = tuple(f for c in (stack.cands if stack else ()) for f in c.fixes)
        return done + [
            Outcome(
                n,
                c.label + note,
                status="skipped",
                reason=why,
                settings=c.settings,
                on_top_of=stack.name if stack and stack.cands else None,
                predicted=self.lab.predictor.speedup(c.fixes, below),
            )
            for c, n in zip(cands[fit:], names[fit:])
        ]

    def _fitting(self, n: int, left: float) -> int:
        """How many of n candidates (the most promising first) fit in what is left of the budget: a sweep that
        does not fit whole is cut to its head rather than left out. Arms past the head also leave room for the
        fewest rounds of each later candidate predicted to gain more than the margin: on the blog script (H200,
        --budget 240) a second worker count took the time CUDA graphs needed, and the tune stopped at 4x."""
        rounds = self.lab.sched.early_rounds or self.lab.sched.min_rounds
        later = self.later * (2 * EARLY_ROUNDS + 1) * self.cost()
        for k in range(n, 0, -1):
            if self.need(k, rounds)[1] + self.kept_back()[1] + (later if k > 1 else 0.0) <= left:
                return k
        return 0


def _failure(r: dict[str, Any]) -> str:
    return r.get("error") or r["status"]


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


def _noise(base: dict, repeat: dict) -> dict[str, Optional[float]]:
    """How much two runs of the unmodified script differ: step time (%) and per-step loss (relative)."""
    if repeat.get("status") != "ok" or not base.get("ms_per_step") or not repeat.get("ms_per_step"):
        return {"time_pct": None, "loss_rel_diff": None}
    t = 100 * abs(repeat["ms_per_step"] - base["ms_per_step"]) / base["ms_per_step"]
    n = min(len(base["losses"]), len(repeat["losses"]))
    d = _check_same(base["losses"][:n], repeat["losses"][:n], False, None)[1] if n else None
    return {"time_pct": round(t, 2), "loss_rel_diff": d}


def _run_child(
    script: str, args: list[str], settings: dict, opts: TuneOptions, out: Path, script_dir: str = ""
) -> dict[str, Any]:
    cmd = [
        sys.executable,
        "-m",
        "idlehound.tune._child",
        str(out),
        json.dumps(settings),
        str(opts.skip),
        str(opts.steps),
        script,
        *args,
    ]
    launched = time.time()
    env = {**os.environ, **compile_cache_env(out.parent), TUNE_LAUNCHED.name: repr(launched)}
    if script_dir:
        env[TUNE_SCRIPT_DIR.name] = script_dir
    try:  # no stdin: a script that reads it would wait for ever
        r = subprocess.run(
            cmd, capture_output=True, text=True, timeout=opts.timeout_s, stdin=subprocess.DEVNULL, env=env
        )
    except subprocess.TimeoutExpired:
        return {
            "status": "failed",
            "losses": [],
            "error": f"did not finish within --child-timeout {opts.timeout_s} s (raise it for a slow start-up)",
        }
    if not out.exists():
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1][:300]
        return {"status": "failed", "error": f"exit code {r.returncode}: {tail}", "losses": []}
    result = json.loads(out.read_text())
    if isinstance(result.get("phases_s"), dict):  # the rest, after the last milestone: the process's exit
        result["phases_s"]["total"] = round(time.time() - launched, 3)
        out.write_text(json.dumps(result))
    return result


def compile_cache_env(folder: Path) -> dict[str, str]:
    """torch.compile's caches in the tune folder: the first run of a compiled variant fills them and the later
    runs (each its own process) load the compiled code instead of compiling again."""
    cache = (folder / "compile_cache").resolve()
    return {
        "TORCHINDUCTOR_CACHE_DIR": str(cache),
        "TRITON_CACHE_DIR": str(cache / "triton"),
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
        "TORCHINDUCTOR_AUTOGRAD_CACHE": "1",
    }


def _diagnosed_causes(script, args, opts, run_dir: Path) -> tuple[set[str], Predictor]:
    """Profile a short window of the unmodified script; the causes the diagnosis found, and its replay."""
    from ..pipeline import analyze_path

    logdir = run_dir / "profile"
    skip = max(1, min(opts.skip, 5))
    cmd = [
        sys.executable,
        "-m",
        "idlehound",
        "run",
        "--logdir",
        str(logdir),
        "--skip",
        str(skip),
        "--warmup",
        "1",
        "--active",
        "3",
        "--stop-after",
        "--no-report",
        script,
        *args,
    ]
    try:
        subprocess.run(cmd, capture_output=True, text=True, timeout=opts.timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return set(), Predictor(None)
    try:
        res = analyze_path(logdir)
    except IdlehoundError:
        return set(), Predictor(None)
    causes = {f.cause for f in res.findings}
    if (
        res.analysis.kernels.fp32_matmul_ns > 0
    ):  # hidden while the GPU waits for data; shows once that is fixed
        causes.add("fp32_math")
    return causes, Predictor(res.analysis)


def _choose(cands: list[Candidate], causes: set[str], base: dict, cuda: bool, opts: TuneOptions):
    known = {c.name for c in cands}
    counts = [re.fullmatch(r"workers([1-9][0-9]*)", t) for t in opts.try_ if t not in known]
    extra = [workers_candidate(int(m.group(1)), cuda) for m in counts if m]
    facts = base.get("facts") or {}
    wanted = [
        c
        for c in _loader_first(cands + extra)
        if c.name not in opts.skip_candidates
        and (
            c.name in opts.try_
            or (not opts.try_ and (bool(causes & set(c.causes)) or bool(c.fact and facts.get(c.fact))))
        )
    ]
    pinning = any(
        c.settings.get("loader", {}).get("pin_memory") and "num_workers" in c.settings["loader"]
        for c in wanted
    )
    chosen, skipped = [], []
    has_loader = bool(base.get("loaders"))
    for c in wanted:
        if c.framework and facts.get(FRAMEWORK_FACTS[c.framework][0]) is None:
            if c.name in opts.try_:  # tried by name: say why not; proposed by a cause: not this script's kind
                skipped.append(
                    Outcome(
                        c.name,
                        c.label,
                        status="skipped",
                        reason=FRAMEWORK_FACTS[c.framework][2],
                        settings=c.settings,
                    )
                )
            continue
        reason = (
            "the script builds no DataLoader"
            if c.needs_loader and not has_loader
            else "needs CUDA"
            if c.needs_cuda and not cuda
            else "every num_workers candidate pins memory already"
            if c.name == "pin_memory" and pinning and c.name not in opts.try_
            else ""
        )
        idle = "" if reason else not_applicable(c, facts)
        if idle:  # would change nothing in this script: not timed, so noise cannot pass for a win
            skipped.append(
                Outcome(c.name, c.label, status="not applicable", reason=idle, settings=c.settings)
            )
        elif reason:
            skipped.append(Outcome(c.name, c.label, status="skipped", reason=reason, settings=c.settings))
        else:
            chosen.append(c)
    return chosen, skipped


def _predict_untried(skipped: list[Outcome], cands: list[Candidate], predictor: Predictor) -> None:
    """The replay's prediction for candidates left out before any run (over the baseline), so that each
    still tests the diagnosis."""
    fixes = {c.name: c.fixes for c in cands}
    for o in skipped:
        o.predicted = predictor.speedup(fixes.get(o.candidate, ()))


def _suggested_first(loader: list[Candidate]) -> list[Candidate]:
    """Loader settings the replay cannot tell apart in the order a cut sweep should keep: the suggested worker
    count first, then the larger ones (headroom for the later stages), then the smaller."""
    best = suggested_workers(os.cpu_count() or 2)

    def key(c: Candidate) -> tuple[int, int]:
        n = c.settings.get("loader", {}).get("num_workers")
        if n is None:
            return (3, 0)
        return (0, 0) if n == best else (1, n) if n > best else (2, -n)

    return sorted(loader, key=key)


def _loader_first(cands: list[Candidate]) -> list[Candidate]:
    return [c for c in cands if c.needs_loader] + [c for c in cands if not c.needs_loader]


def check_losses(
    ref: list[float], got: list[float], math: str, cuda: bool, noise: Optional[float] = None
) -> tuple[bool, Optional[float], str]:
    """Compare per-step losses; returns (ok, largest relative difference, what was checked).

    "same": bitwise equal on the CPU; on CUDA, where reductions may reorder between runs, equal within 1e-5 or
    twice the difference between two runs of the unmodified script, whichever is larger.
    "precision": every loss finite, and the running mean of the last SMOOTH losses within RTOL (+ ATOL) of
    the baseline's at every step.
    """
    n = min(len(ref), len(got))
    if n == 0:
        return False, None, "no losses recorded"
    if math == "same":
        return _check_same(ref[:n], got[:n], cuda, noise)
    bad = next((i for i in range(n) if not _math.isfinite(got[i])), None)
    if bad is not None:
        return False, None, f"loss not finite at step {bad}: {got[bad]}"
    r, g = _running_mean(ref[:n]), _running_mean(got[:n])
    diffs = [abs(b - a) / max(abs(a), 1e-12) for a, b in zip(r, g)]
    worst = round(max(diffs), 8)
    what = f"{SMOOTH}-step mean within {RTOL:g} rel + {ATOL:g}"
    off = next((i for i in range(n) if abs(g[i] - r[i]) > ATOL + RTOL * abs(r[i])), None)
    if off is None:
        return True, worst, f"{what}: ok ({n} steps)"
    return False, worst, f"{what}: diverged at step {off}: {r[off]:.6g} vs {g[off]:.6g}"


def _check_same(ref: list[float], got: list[float], cuda: bool, noise: Optional[float]):
    diffs = [abs(b - a) / max(abs(a), 1e-12) for a, b in zip(ref, got)]
    worst_i = max(range(len(diffs)), key=diffs.__getitem__)
    worst = diffs[worst_i]
    tol = max(SAME_RTOL_CUDA, 2 * (noise or 0.0)) if cuda else 0.0
    what = "bitwise equal" if not cuda else f"equal within {tol:.2g}"
    if worst <= tol:
        return True, round(worst, 8), f"{what}: ok ({len(ref)} steps)"
    return (
        False,
        round(worst, 8),
        f"{what}: diverged at step {worst_i}: {ref[worst_i]:.6g} vs {got[worst_i]:.6g}",
    )


def _running_mean(xs: list[float]) -> list[float]:
    out, acc = [], 0.0
    for i, x in enumerate(xs):
        acc += x - (xs[i - SMOOTH] if i >= SMOOTH else 0.0)
        out.append(acc / min(i + 1, SMOOTH))
    return out


def _refined(stage1: list[Candidate], floor, cuda: bool) -> list[Candidate]:
    """Worker counts between the sweep's best and its neighbours (the best is rarely exactly on the grid)."""
    counts = [
        c.settings["loader"]["num_workers"] for c in stage1 if "num_workers" in c.settings.get("loader", {})
    ]
    if floor is None or "num_workers" not in floor[0].settings.get("loader", {}):
        return []
    best = floor[0].settings["loader"]["num_workers"]
    return [workers_candidate(n, cuda) for n in refine_workers(counts, best, os.cpu_count() or 2)]


BUSY_GPU = 80.0  # % GPU busy above which the GPU, not the loader, sets the pace


def _on_top(
    lab: _Budget, stack: _Stack, cand: Candidate, name: str, outcomes: list[Outcome], note: str = ""
) -> _Stack:
    """Time cand on top of the stack against the stack's own run, record the outcome, return the stack it leaves."""
    (o,) = lab.experiment(stack if stack.cands else None, [cand], note, [name])
    if not stack.cands:
        o.on_top_of = None
    outcomes.append(o)
    return stack.grown(cand, o)


def _more_workers(stack: _Stack, stage1: list[Candidate], cuda: bool) -> list[Candidate]:
    """The next larger worker count of the sweep, once more on top of the whole stack, when stage 2 kept
    something and the GPU still waits: the loader was chosen while the host paced the step, and more workers
    that measured slower then may be faster now."""
    loader = [c for c in stack.cands if "num_workers" in c.settings.get("loader", {})]
    util = stack.outcome.gpu_util if stack.outcome else None
    if not loader or len(stack.cands) < 2 or util is None or util >= BUSY_GPU:
        return []
    n = loader[0].settings["loader"]["num_workers"]
    above = [
        c.settings["loader"]["num_workers"]
        for c in stage1
        if c.settings.get("loader", {}).get("num_workers", 0) > n
    ]
    return [workers_candidate(min(above), cuda)] if above else []


def _helped(o: Optional[Outcome]) -> bool:
    """Ran, kept the math, and its 95% interval over its reference excludes 1.0 by the margin."""
    return o is not None and o.status == "ok" and o.effect == "faster"


def _best(
    stage: list[Candidate], outcomes: list[Outcome], tie: float = 0.03
) -> Optional[tuple[Candidate, Outcome]]:
    """The fastest candidate of a stage that measured faster than the baseline, with its outcome. Among loader settings
    within `tie` of the fastest, the one with the most workers: while something else bounds the step they
    measure alike, and the later stages need the loader's headroom."""
    by = {o.candidate: o for o in outcomes}
    good = [(c, by[c.name]) for c in stage if _helped(by.get(c.name))]
    if not good:
        return None
    top = max(o.speedup or 0.0 for _, o in good)  # a candidate that helped has a speed-up
    near = [co for co in good if (co[1].speedup or 0.0) >= top * (1 - tie)]
    return max(near, key=lambda co: (co[0].settings.get("loader", {}).get("num_workers", 0), co[1].speedup))


def _merge(*settings: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for s in settings:
        for k, v in s.items():
            out[k] = {**out.get(k, {}), **v} if isinstance(v, dict) else v
    return out


@dataclass(frozen=True)
class _Stack:
    """The changes kept so far and the run that measured them together."""

    cands: tuple[Candidate, ...] = ()
    outcome: Optional[Outcome] = None

    @classmethod
    def start(cls, floor: Optional[tuple[Candidate, Outcome]]) -> _Stack:
        return cls((floor[0],), floor[1]) if floor else cls()

    @property
    def name(self) -> str:
        return " + ".join(c.name for c in self.cands)

    def plus(self, cand: Candidate) -> tuple[dict[str, Any], str]:
        """Settings and loss check for cand on top of the stack (a loader candidate replaces the stack's)."""
        cands = (*self._without(cand), cand)
        math = "precision" if any(c.math == "precision" for c in cands) else "same"
        return _merge(*(c.settings for c in cands)), math

    def grown(self, cand: Candidate, o: Outcome) -> _Stack:
        """The stack with cand when its run kept the math and measured faster than the stack's own run."""
        return _Stack((*self._without(cand), cand), o) if _helped(o) else self

    def _without(self, cand: Candidate) -> tuple[Candidate, ...]:
        return tuple(
            c
            for c in self.cands
            if not (c.needs_loader and cand.needs_loader) and not (c.group and c.group == cand.group)
        )


def _document(
    script: str,
    opts: TuneOptions,
    causes: set[str],
    outcomes: list[Outcome],
    run_dir: Path,
    noise: dict[str, Optional[float]],
    drift: Optional[float] = None,
    check: Optional[Callable[[str], str]] = None,
    prediction: Optional[dict[str, Any]] = None,
):
    """The tune document. check(changed source) -> "" when the changed script runs, else why not."""
    best = max((o for o in outcomes[1:] if is_win(o)), key=lambda o: o.speedup or 0, default=None)
    snippets: list[str] = []
    diff, checked = "", ""
    if best is not None:
        diff, snippets = make_diff(Path(script), best.settings, best.graphed_inputs)
        if diff and check is not None:
            new, _ = changed_source(
                Path(script).read_text(encoding="utf-8"), best.settings, best.graphed_inputs
            )
            why = check(new)
            checked = "ran: the changed script built its loader and trained" if not why else f"failed: {why}"
            if why:  # never show a diff that does not run: what it would change, and why it is not shown
                added = [
                    ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")
                ]
                snippets = [
                    f"# idlehound tune: the diff was not shown: the changed script {why}.\n"
                    "# The changes it made, to apply by hand:\n" + "\n".join(added)
                ] + snippets
                diff = ""
    from ..report import model as m

    return m.as_data(
        m.Tune(
            schema="idlehound/tune",
            schema_version=3,
            script=script,
            run_dir=str(run_dir),
            steps=opts.steps,
            skip=opts.skip,
            diagnosed_causes=sorted(causes),
            prediction=prediction or {"available": False},
            budget_s=opts.budget_s,
            noise=m.Noise(**noise),
            drift_pct=drift,
            rounds=[opts.min_rounds, opts.max_rounds],
            margin=MARGIN,
            variants=[m.Variant(**asdict(o)) for o in outcomes],
            best=m.Variant(**asdict(best)) if best else None,
            diff=diff,
            snippets=snippets,
            diff_check=checked,
        )
    )


def is_win(o: Outcome) -> bool:
    """Kept the math, measurably faster than its own reference (the stack below it, for a change on top) and
    than the baseline: a change that is not faster is never the best."""
    low = (o.speedup_ci or [0.0])[0]
    return _helped(o) and (o.speedup or 0) > 1.0 and low > 1.0


def _runs_changed(script: str, args: list[str], opts: TuneOptions, run_dir: Path, new: str) -> str:
    """ "" when the changed script parses and runs a few optimizer steps in a child; else what went wrong."""
    import ast

    try:
        ast.parse(new)
    except SyntaxError as e:
        return f"does not parse (line {e.lineno}: {e.msg})"
    copy = run_dir / f"changed_{Path(script).name}"
    copy.write_text(new, encoding="utf-8")
    short = replace(opts, skip=1, steps=2)
    r = _run_child(
        str(copy),
        args,
        {},
        short,
        run_dir / "changed_check.json",
        script_dir=str(Path(script).resolve().parent),
    )
    if r["status"] not in ("ok", "short"):
        return f"failed when run: {_failure(r)}"
    return _other_branches(str(copy), args, opts, run_dir, str(Path(script).resolve().parent), new)


def _other_branches(
    copy: str, args: list[str], opts: TuneOptions, run_dir: Path, script_dir: str, new: str
) -> str:
    """ "" when the changed script builds its loaders with an accelerator forced on and forced off (an edit
    under `if use_accel:` or in `{...} if use_accel else {}` runs on one branch here); else what broke."""
    import re

    if not re.search(r"is_available\(|accel|no.cuda", new):
        return ""  # the script does not branch on the accelerator
    for branch in ("cpu", "accel"):
        out = run_dir / f"changed_check_{branch}.json"
        cmd = [sys.executable, "-m", "idlehound.tune._branches", str(out), branch, copy, *args]
        env = {**os.environ, TUNE_SCRIPT_DIR.name: script_dir}
        try:
            subprocess.run(
                cmd,
                capture_output=True,
                timeout=opts.timeout_s,
                stdin=subprocess.DEVNULL,
                env=env,
                check=False,
            )
        except subprocess.TimeoutExpired:
            continue  # the loaders were not reached in time: this branch is not checked
        got = json.loads(out.read_text()) if out.exists() else {}
        if got.get("broken"):
            where = "with an accelerator" if branch == "accel" else "without an accelerator"
            return f"failed {where}: {got['broken']}"
    return ""


__all__ = [
    "Progress",
    "TuneOptions",
    "print_progress",
    "check_losses",
    "render_tune",
    "run_tune",
    "tune_html",
    "tune_markdown",
]
