"""`idlehound tune`: apply the fixes to an unmodified script, measure each side by side, check the math.

Every variant runs in its own process (no cudnn cache, compiled code or worker processes leak between them),
with the same seeds, for the same number of steps after the same warm-up. Each variant's per-step losses are
compared with the baseline's: exactly (changes that must not alter the math, such as loader workers) or within a
tolerance (precision changes). Losing or crashing variants are rejected with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from ..errors import IdlehoundError
from ._candidates import Candidate, Outcome, all_candidates
from ._diff import make_diff

RTOL, ATOL = 0.05, 0.01  # precision changes: per-step loss within 5% (or 0.01 absolute) of the baseline
SAME_RTOL_CUDA = 1e-5  # GPU reductions may reorder between runs; on the CPU "same" means bitwise equal


@dataclass
class TuneOptions:
    steps: int = 30
    skip: int = 10
    try_: list[str] = field(default_factory=list)
    skip_candidates: list[str] = field(default_factory=list)
    logdir: Path = Path("log")
    diagnose: bool = True
    timeout_s: int = 900


def run_tune(script: str, args: list[str], opts: TuneOptions,
             progress: Callable[[str], None] = lambda m: sys.stderr.write(m + "\n")) -> dict[str, Any]:
    """Tune script; returns the tune document (schema idlehound/tune, version 1) and writes it to a run folder."""
    from ..capture import new_run_dir

    if not Path(script).is_file():
        raise IdlehoundError(f"{script}: no such script")
    import torch

    cuda = torch.cuda.is_available()
    run_dir = new_run_dir(Path(opts.logdir), f"tune-{Path(script).stem}")
    progress(f"idlehound tune: baseline ({opts.skip} warm-up + {opts.steps} timed steps)")
    base = _child(script, args, {}, opts, run_dir / "baseline.json")
    if base["status"] != "ok":
        raise IdlehoundError(f"{script}: the unmodified script did not complete {opts.skip + opts.steps} "
                             f"optimizer steps ({base['error'] or base['status']})")
    causes = _diagnosed_causes(script, args, opts, run_dir, progress) if opts.diagnose else set()
    chosen, skipped = _choose(all_candidates(os.cpu_count() or 2, cuda), causes, base, cuda, opts)
    outcomes = [_baseline_outcome(base)] + skipped
    for i, cand in enumerate(chosen, 1):
        progress(f"idlehound tune: [{i}/{len(chosen)}] {cand.label}")
        outcomes.append(_evaluate(cand.name, cand.label, cand.settings, cand.math, script, args, opts, run_dir,
                                  base, cuda))
    combo = _combine(chosen, outcomes)
    if combo is not None:
        progress("idlehound tune: best combination")
        names, settings, math = combo
        outcomes.append(_evaluate("+".join(names), "combined: " + " + ".join(names), settings, math, script, args,
                                  opts, run_dir, base, cuda))
    doc = _document(script, opts, causes, outcomes, run_dir)
    (run_dir / "tune.json").write_text(json.dumps(doc, indent=2))
    from .report import tune_html, tune_markdown

    (run_dir / "tune.md").write_text(tune_markdown(doc))
    (run_dir / "tune.html").write_text(tune_html(doc), encoding="utf-8")
    return doc


def _child(script: str, args: list[str], settings: dict, opts: TuneOptions, out: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "idlehound.tune._child", str(out), json.dumps(settings), str(opts.skip),
           str(opts.steps), script, *args]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=opts.timeout_s)
    except subprocess.TimeoutExpired:
        return {"status": "failed", "error": f"timed out after {opts.timeout_s} s", "losses": []}
    if not out.exists():
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1][:300]
        return {"status": "failed", "error": f"exit code {r.returncode}: {tail}", "losses": []}
    return json.loads(out.read_text())


def _diagnosed_causes(script, args, opts, run_dir: Path, progress) -> set[str]:
    """Profile a short window of the unmodified script and keep the causes the diagnosis found."""
    from ..pipeline import analyze_path

    progress("idlehound tune: diagnosing the baseline (short profile)")
    logdir = run_dir / "profile"
    skip = max(1, min(opts.skip, 5))
    cmd = [sys.executable, "-m", "idlehound", "run", "--logdir", str(logdir), "--skip", str(skip), "--warmup", "1",
           "--active", "3", "--stop-after", "--no-report", script, *args]
    subprocess.run(cmd, capture_output=True, text=True, timeout=opts.timeout_s)
    try:
        res = analyze_path(logdir)
    except IdlehoundError:
        return set()
    return {f.cause for f in res.findings}


def _choose(cands: list[Candidate], causes: set[str], base: dict, cuda: bool, opts: TuneOptions):
    chosen, skipped = [], []
    has_loader = bool(base.get("loaders"))
    for c in cands:
        wanted = c.name in opts.try_ or (not opts.try_ and bool(causes & set(c.causes)))
        if not wanted or c.name in opts.skip_candidates:
            continue
        reason = ("the script builds no DataLoader" if c.needs_loader and not has_loader else
                  "needs CUDA" if c.needs_cuda and not cuda else "")
        if reason:
            skipped.append(Outcome(c.name, c.label, status="skipped", reason=reason, settings=c.settings))
        else:
            chosen.append(c)
    return chosen, skipped


def _baseline_outcome(base: dict) -> Outcome:
    o = Outcome("baseline", "the script as written", settings={}, loss_check="reference", speedup=1.0,
                gpu_util=base.get("gpu_util"))
    _throughput(o, base)
    return o


def _throughput(o: Outcome, r: dict) -> None:
    ms = r.get("ms_per_step")
    if ms:
        o.steps_per_s = round(1e3 / ms, 2)
        bs = (r.get("loaders") or [{}])[0].get("batch_size")
        o.samples_per_s = round(bs * 1e3 / ms, 1) if bs else None


def _evaluate(name, label, settings, math, script, args, opts, run_dir: Path, base: dict, cuda: bool) -> Outcome:
    o = Outcome(name, label, settings=settings)
    r = _child(script, args, settings, opts, run_dir / f"{name}.json")
    if r["status"] != "ok":
        o.status, o.reason = "failed", r.get("error") or r["status"]
        return o
    _throughput(o, r)
    o.gpu_util = r.get("gpu_util")
    if o.steps_per_s and base.get("ms_per_step"):
        o.speedup = round(base["ms_per_step"] / r["ms_per_step"], 3)
    ok, o.max_rel_diff, o.loss_check = check_losses(base["losses"], r["losses"], math, cuda)
    if not ok:
        o.status, o.reason = "rejected", o.loss_check
    return o


def check_losses(ref: list[float], got: list[float], math: str, cuda: bool) -> tuple[bool, Optional[float], str]:
    """Compare per-step losses; returns (ok, largest relative difference, what was checked)."""
    n = min(len(ref), len(got))
    if n == 0:
        return False, None, "no losses recorded"
    worst, worst_i = 0.0, 0
    for i in range(n):
        d = abs(got[i] - ref[i]) / max(abs(ref[i]), 1e-12)
        if d > worst:
            worst, worst_i = d, i
    if math == "same":
        tol = SAME_RTOL_CUDA if cuda else 0.0
        ok = worst <= tol
        what = "bitwise equal" if not cuda else f"equal within {tol:g}"
    else:
        bad = [i for i in range(n) if abs(got[i] - ref[i]) > ATOL + RTOL * abs(ref[i])]
        ok = not bad
        worst_i = bad[0] if bad else worst_i
        what = f"within {RTOL:g} rel / {ATOL:g} abs"
    verdict = f"{what}: ok ({n} steps)" if ok else \
        f"{what}: diverged at step {worst_i}: {ref[worst_i]:.6g} vs {got[worst_i]:.6g}"
    return ok, round(worst, 8), verdict


def _combine(chosen: list[Candidate], outcomes: list[Outcome]):
    """The fastest accepted loader variant plus every other accepted change that helped (>= 3%)."""
    by = {o.candidate: o for o in outcomes}
    good = [c for c in chosen if by[c.name].status == "ok" and (by[c.name].speedup or 0) >= 1.03]
    loaders = [c for c in good if c.needs_loader and "num_workers" in c.settings.get("loader", {})]
    rest = [c for c in good if c not in loaders]
    picked = ([max(loaders, key=lambda c: by[c.name].speedup)] if loaders else []) + rest
    if len(picked) < 2:
        return None
    settings: dict[str, Any] = {}
    for c in picked:
        for k, v in c.settings.items():
            settings[k] = {**settings.get(k, {}), **v} if isinstance(v, dict) else v
    math = "precision" if any(c.math == "precision" for c in picked) else "same"
    return [c.name for c in picked], settings, math


def _document(script: str, opts: TuneOptions, causes: set[str], outcomes: list[Outcome], run_dir: Path):
    accepted = [o for o in outcomes[1:] if o.status == "ok" and o.speedup]
    best = max(accepted, key=lambda o: o.speedup, default=None)
    diff, snippets = make_diff(Path(script), best.settings) if best and best.speedup > 1.0 else ("", [])
    return {"schema": "idlehound/tune", "schema_version": 1, "script": script, "run_dir": str(run_dir),
            "steps": opts.steps, "skip": opts.skip, "diagnosed_causes": sorted(causes),
            "variants": [asdict(o) for o in outcomes], "best": asdict(best) if best else None,
            "diff": diff, "snippets": snippets}


__all__ = ["TuneOptions", "check_losses", "run_tune"]
