"""`idlehound run` and `idlehound.profile()` end to end: capture, then analyse and report the run folder."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from ..errors import IdlehoundError
from ..vocabulary import STEP_MODES, StepOn
from ._after import analyze_run, report_ranks
from ._watch import watch_flags, watch_options

if TYPE_CHECKING:
    from ..capture import CaptureOptions, RunResult


def profile(*args: Any, **kwargs: Any) -> Any:
    """idlehound.capture.profile whose exit analyses the run folder, writes report.* and prints the summary."""
    from ..capture import profile as _profile

    kwargs.setdefault("on_finish", _after_profile)
    return _profile(*args, **kwargs)


def _after_profile(run_dir: Path, print_report: bool) -> Any:
    return analyze_run(run_dir, print_report=print_report)


@dataclass(frozen=True)
class RunOptions:
    """What `idlehound run` was asked: one field per command-line option, under the option's own name.

    capture_options() turns it into the CaptureOptions of the run (whose defaults the options show); the rest
    says what to run, on how many processes, and what to do after.
    """

    module: Optional[str]
    logdir: Path
    run_name: Optional[str]
    skip: int
    warmup: int
    active: int
    step_on: StepOn
    stop_after: bool
    no_stack: bool
    profile_memory: bool
    no_report: bool
    nproc: Optional[int]
    max_window_seconds: float
    max_window_mb: float
    run_dir: Optional[Path]
    script_and_args: tuple[str, ...]
    # --watch and its triggers (app/_watch.py, docs/long-runs.md)
    watch: bool = False
    capture_when: Optional[str] = None
    capture_every: Optional[int] = None
    max_windows: int = 10
    max_windows_mb: float = 2048.0


def run(o: RunOptions) -> tuple[int, Optional[str]]:
    """Capture a script, then report it: (exit code, None) or (exit code, the one line to end with)."""
    from ..capture import EXIT_SIGINT, EXIT_SIGTERM, Terminated, sigterm_raises

    sigterm_raises()  # from here a SIGTERM (timeout, a scheduler) is handled like Ctrl-C
    res = None
    try:
        res = capture(o)
        report_capture(res, o.nproc, o.run_dir, o.no_report)
    except IdlehoundError as e:
        return 2, str(e)
    except (KeyboardInterrupt, Terminated) as e:
        code, what = (
            (EXIT_SIGINT, "interrupted")
            if isinstance(e, KeyboardInterrupt)
            else (EXIT_SIGTERM, "terminated (SIGTERM)")
        )
        return code, (
            f"{what} before the script started; nothing was captured"
            if res is None
            else f"analysis {what}; the trace is saved: idlehound analyze {res.run_dir}"
        )
    return res.exit_code, None


def capture(o: RunOptions) -> RunResult:
    """Run the script (or module) under the profiler, on nproc processes through torchrun when nproc > 1."""
    from ..capture import run_distributed, run_script
    from ..runfolder import check_run_name

    if o.module is None and not o.script_and_args:
        raise IdlehoundError("run: give a script (idlehound run train.py ...) or -m module")
    if o.skip < 0 or o.warmup < 0 or o.active < 1:
        raise IdlehoundError("run: --skip and --warmup must be >= 0 and --active >= 1")
    if not (o.max_window_seconds >= 0 and o.max_window_mb >= 0):  # also refuses nan
        raise IdlehoundError("run: --max-window-seconds and --max-window-mb must be >= 0 (0: no limit)")
    if o.run_name is not None:
        check_run_name(o.run_name)
    target, args = (
        (o.module, list(o.script_and_args))
        if o.module
        else (o.script_and_args[0], list(o.script_and_args[1:]))
    )
    opts = capture_options(o)
    if o.nproc is not None and o.nproc > 1:
        return run_distributed(target, args, o.nproc, o.module is not None, opts, _inner_flags(o))
    return run_script(target, args, module=o.module is not None, opts=opts)


def capture_options(o: RunOptions) -> CaptureOptions:
    """The capture `idlehound run` was asked for. IdlehoundError on a bad --watch option."""
    from ..capture import CaptureOptions

    opts = CaptureOptions(logdir=o.logdir, run_name=o.run_name, run_dir=o.run_dir, watch=watch_options(o))
    opts.skip, opts.warmup, opts.active, opts.step_on = o.skip, o.warmup, o.active, o.step_on  # the window
    opts.stop_after, opts.with_stack, opts.profile_memory = o.stop_after, not o.no_stack, o.profile_memory
    opts.max_window_seconds, opts.max_window_mb = o.max_window_seconds, o.max_window_mb  # its budgets
    return opts


def _inner_flags(o: RunOptions) -> list[str]:
    """The options each torchrun worker's own `idlehound run` gets again."""
    values = {
        "--skip": o.skip,
        "--warmup": o.warmup,
        "--active": o.active,
        "--step-on": o.step_on,
        "--max-window-seconds": o.max_window_seconds,
        "--max-window-mb": o.max_window_mb,
    }
    switches = {"--stop-after": o.stop_after, "--no-stack": o.no_stack, "--memory": o.profile_memory}
    switches["--watch"] = o.watch
    values.update(watch_flags(o))
    return [a for flag, v in values.items() for a in (flag, str(v))] + [f for f, on in switches.items() if on]


def report_capture(res: RunResult, nproc: Optional[int], run_dir: Optional[Path], no_report: bool) -> None:
    """Print (and write) what was captured: the ranks compared, the one run analysed, or why nothing was."""
    import click

    from ..capture import EXIT_SIGTERM, wait_for_ranks

    if (nproc or 1) > 1 or res.rank is not None:
        if res.rank in (None, 0) and run_dir is None and not no_report:
            if res.rank == 0:  # launched by the user's torchrun: wait for the other ranks' traces
                wait_for_ranks(res.run_dir, int(os.environ.get("WORLD_SIZE", "1")))
            report_ranks(res.run_dir)
    elif not res.traces:
        say_no_trace(res.run_dir)
    elif res.exit_code == EXIT_SIGTERM:  # a scheduler's grace period is short: the analysis can wait
        click.echo(
            f"idlehound: terminated (SIGTERM): trace saved, not analysed: idlehound analyze {res.run_dir} "
            "(analysis left for later: a scheduler's grace period is short)",
            err=True,
        )
    elif not no_report:
        analyze_run(res.run_dir)


def say_no_trace(run_dir: Path) -> None:
    """One line that stands out: nothing was profiled, why, and what was still written."""
    from rich.console import Console
    from rich.text import Text

    from ..runfolder import RUN, SAMPLES

    line = Text("idlehound: no trace was captured", style="bold red")
    line.append(f": {why_no_trace(run_dir)}. {RUN}.json and {SAMPLES}.json were still written to {run_dir}")
    Console(stderr=True, soft_wrap=True).print(line)


def why_no_trace(run_dir: Path) -> str:
    """Name the reason the window was never recorded, from what run.json knows."""
    from ..runfolder import run_file

    try:
        info = json.loads(run_file(run_dir, None).read_text())
    except (OSError, ValueError):
        return f"run.json in {run_dir} could not be read"
    sched = info.get("schedule") or {}
    steps, start = int(info.get("steps_seen") or 0), int(sched.get("skip", 0)) + int(sched.get("warmup", 0))
    facts = info.get("script_facts") or {}
    if info.get("exit_code") not in (0, None) and steps < start:
        how = info.get("error")
        if not how:
            how = f"the script exited with code {info['exit_code']}"
        elif info["exit_code"] not in (130, 143) and not how.startswith("os._exit"):
            how = f"the script failed first ({_first_line(how)})"
        return f"{how} after {steps} step(s), before the window began at step {start}"
    if facts.get("child_processes") and steps == 0:
        return (
            f"the script trains in {facts['child_processes']} child process(es) (multiprocessing, mp.spawn); "
            "idlehound profiles the process it starts: use idlehound.profile() inside the worker"
        )
    if sched.get("step_on") not in (*STEP_MODES, None) and steps == 0:
        return f"no function named {sched['step_on']!r} returned in the main thread: check --step-on"
    if sched.get("step_on") == "optimizer" and not facts.get("optimizer_steps"):
        return (
            "no optimizer.step() was called, so no step ended: use --step-on dataloader, or --step-on NAME "
            "of the function that runs one step"
        )
    if steps < start:
        return (
            f"the script made {steps} step(s); the window starts after {start} "
            "(lower --skip/--warmup, or check --step-on)"
        )
    cut = (info.get("window") or {}).get("cut_by", "")
    return f"the window was ended by {cut} during the profiler's warm-up; lower --warmup"


def _first_line(error: str, width: int = 160) -> str:
    """An exception's message on one line: its first line, cut to width (run.json keeps it whole)."""
    lines = error.strip().splitlines() or [""]
    line = lines[0] + (" ..." if len(lines) > 1 else "")
    return line if len(line) <= width else line[: width - 4] + " ..."


def unknown_option(arg: str, options: list[str]) -> str:
    """`idlehound run --skp 3 train.py`: the option named, and the nearest of run's own."""
    import difflib

    name = arg.split("=", 1)[0]
    close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    return f"run: no such option {name}{hint} (idlehound's options go before the script)"


def misplaced_options(
    module: Optional[str], script_and_args: tuple[str, ...], options: list[str]
) -> list[str]:
    """idlehound options given after the script, which the script does not define: they go to the script."""
    if module is not None or len(script_and_args) < 2:
        return []
    script = Path(script_and_args[0])
    try:
        source = script.read_text(errors="replace")
    except OSError:
        return []
    given = [a.split("=", 1)[0] for a in script_and_args[1:] if a.startswith("--")]
    stray = [a for a in dict.fromkeys(given) if a in options and a not in source]
    return [
        f"{a} comes after {script.name}, so it goes to the script, which does not define it; "
        f"idlehound's options go before the script (idlehound run {a} ... {script.name})"
        for a in stray
    ]
