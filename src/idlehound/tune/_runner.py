"""The child processes of a tune: a variant's run (_child), the short profile that diagnoses the baseline, and
the check that the changed script runs (on both sides of an accelerator branch, _branches)."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, cast

from ..errors import IdlehoundError
from ..settings import TUNE_LAUNCHED, TUNE_SCRIPT_DIR
from ..vocabulary import Cause
from ._options import TuneOptions
from ._predict import Predictor

Runner = Callable[
    ..., dict[str, Any]
]  # run_child's signature: (script, args, settings, opts, out, script_dir)


def run_child(
    script: str, args: list[str], settings: dict[str, Any], opts: TuneOptions, out: Path, script_dir: str = ""
) -> dict[str, Any]:
    """Run the script once in a child with a variant's settings; its result (status, losses, ms_per_step...)."""
    cmd = [sys.executable, "-m", "idlehound.tune._child", str(out), json.dumps(settings)]
    cmd += [str(opts.skip), str(opts.steps), script, *args]
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
    result: dict[str, Any] = json.loads(out.read_text())
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


def failure(r: dict[str, Any]) -> str:
    return cast(str, r.get("error") or r["status"])  # both text


def diagnosed_causes(
    script: str, args: list[str], opts: TuneOptions, run_dir: Path
) -> tuple[set[Cause], Predictor]:
    """Profile a short window of the unmodified script; the causes the diagnosis found, and its replay."""
    from ..pipeline import analyze_path

    logdir = run_dir / "profile"
    skip = max(1, min(opts.skip, 5))
    cmd = [sys.executable, "-m", "idlehound", "run", "--logdir", str(logdir), "--skip", str(skip)]
    cmd += ["--warmup", "1", "--active", "3", "--stop-after", "--no-report", script, *args]
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
        causes.add(Cause.FP32_MATH)
    return causes, Predictor(res.analysis)


def runs_changed(
    script: str, args: list[str], opts: TuneOptions, run_dir: Path, new: str, runner: Runner = run_child
) -> str:
    """ "" when the changed script parses and runs a few optimizer steps in a child; else what went wrong."""
    try:
        ast.parse(new)
    except SyntaxError as e:
        return f"does not parse (line {e.lineno}: {e.msg})"
    copy = run_dir / f"changed_{Path(script).name}"
    copy.write_text(new, encoding="utf-8")
    short = replace(opts, skip=1, steps=2)
    script_dir = str(Path(script).resolve().parent)
    r = runner(str(copy), args, {}, short, run_dir / "changed_check.json", script_dir=script_dir)
    if r["status"] not in ("ok", "short"):
        return f"failed when run: {failure(r)}"
    return _other_branches(str(copy), args, opts, run_dir, script_dir, new)


def _other_branches(
    copy: str, args: list[str], opts: TuneOptions, run_dir: Path, script_dir: str, new: str
) -> str:
    """ "" when the changed script builds its loaders with an accelerator forced on and forced off (an edit
    under `if use_accel:` or in `{...} if use_accel else {}` runs on one branch here); else what broke."""
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
