"""Command line: parses arguments and calls the library. Exit codes: 0 ok, 1 gate failed, 2 bad input."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import NoReturn, Optional

import click

from . import __version__
from .errors import IdlehoundError


def _fail(msg: str, code: int = 2) -> NoReturn:
    from .report._escape import visible

    click.echo(f"idlehound: {visible(msg)}", err=True)  # a message may quote a name from a trace
    sys.exit(code)


def _guard(fn):
    """Typed errors become one line on stderr and exit 2; never a traceback for bad input."""
    import functools

    @functools.wraps(fn)
    def wrapper(*a, **kw):
        try:
            return fn(*a, **kw)
        except IdlehoundError as e:
            _fail(str(e))
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except Exception as e:  # a bug: say so in one line unless debugging
            if os.environ.get("IDLEHOUND_DEBUG"):
                raise
            _fail(f"internal error: {type(e).__name__}: {e} (set IDLEHOUND_DEBUG=1 for the traceback)", 3)
    return wrapper


class _Group(click.Group):
    def invoke(self, ctx: click.Context):
        """A Ctrl-C anywhere in a command exits 130, as a shell expects, not click's "Aborted!" and 1."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            _fail("interrupted", 130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="idlehound")
def main() -> None:
    """Catch a GPU slacking during PyTorch training, name why, and point at the line."""


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report instead of the summary.")
@click.option("--step", type=int, default=None, help="Analyse only ProfilerStep#N.")
@click.option("--run", default=None, help="Run folder inside a log dir (default: the newest).")
@click.option("--worker", default=None, help="Worker (trace file prefix) inside the run.")
@click.option("--fail-under", "fail_under", multiple=True, metavar="METRIC=VALUE",
              help="Exit 1 when a metric is below VALUE, e.g. gpu_util=70 (repeatable).")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="Also write the report: .json, .md or .html by extension (with --ranks: .json or .html).")
@click.option("--ranks", is_flag=True, help="Compare every rank of a distributed run: straggler and waits.")
@click.option("--force", is_flag=True, help="Overwrite an existing -o file (never the input trace).")
@_guard
def analyze(path: Path, as_json: bool, step: Optional[int], run: Optional[str], worker: Optional[str],
            fail_under: tuple[str, ...], output: Optional[Path], ranks: bool, force: bool = False) -> None:
    """Analyse a torch.profiler trace (.pt.trace.json[.gz]) or a TensorBoard log dir."""
    from .pipeline import analyze_path, failed_gates, parse_gates

    if ranks:
        from .distributed import analyze_ranks, render_ranks
        from .report.files import check_output, write_ranks

        if output is not None:
            check_output(output, force, [path])
        doc = analyze_ranks(path)
        if output is not None:
            write_ranks(doc, output, force, [path])
        if as_json:
            click.echo(json.dumps(doc, indent=2))
        else:
            render_ranks(doc)
        return
    gates = parse_gates(fail_under)
    if output is not None:
        from .report.files import check_output

        check_output(output, force, [path])  # before the analysis: a refused -o costs nothing
    res = analyze_path(path, run=run, worker=worker, step=step)
    if output is not None:
        from .report.files import write_report

        write_report(res.doc, output, force, [path])
    if as_json:
        click.echo(json.dumps(res.doc, indent=2))
    else:
        from .report.terminal import render

        render(res.doc)
    failed = failed_gates(res.doc, gates)
    if failed:
        click.echo("idlehound: gate failed: " + "; ".join(failed), err=True)
        sys.exit(1)


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-m", "module", default=None, metavar="MODULE", help="Run a module, like python -m.")
@click.option("--logdir", type=click.Path(path_type=Path), default=Path("log"), show_default=True,
              help="Folder for run folders (TensorBoard layout).")
@click.option("--name", "run_name", default=None, help="Run name prefix (default: the script name).")
@click.option("--skip", type=int, default=10, show_default=True, help="Steps to run before profiling (warm-up, compile).")
@click.option("--warmup", type=int, default=2, show_default=True, help="Profiler warm-up steps (recorded, discarded).")
@click.option("--active", type=int, default=5, show_default=True, help="Steps to record.")
@click.option("--step-on", default="optimizer", show_default=True,
              help="What ends a step: optimizer, dataloader, or a function name.")
@click.option("--stop-after", is_flag=True, help="End the script once the window is captured.")
@click.option("--no-stack", is_flag=True, help="Do not record Python stacks (less overhead, no source lines).")
@click.option("--memory", "profile_memory", is_flag=True, help="Record memory allocations.")
@click.option("--no-report", is_flag=True, help="Do not print the analysis at the end.")
@click.option("--nproc", type=int, default=None, help="Launch N processes through torchrun (torch.distributed).")
@click.option("--max-window-seconds", type=float, default=120.0, show_default=True,
              help="Cut the profiled window when it records longer than this (0: no limit).")
@click.option("--max-window-mb", type=float, default=512.0, show_default=True,
              help="Cut the profiled window when the process grows by more than this while recording (0: no limit).")
@click.option("--run-dir", type=click.Path(path_type=Path), default=None, hidden=True)
@click.argument("script_and_args", nargs=-1, type=click.UNPROCESSED)
def run(module: Optional[str], logdir: Path, run_name: Optional[str], skip: int, warmup: int, active: int,
        step_on: str, stop_after: bool, no_stack: bool, profile_memory: bool, no_report: bool,
        nproc: Optional[int], max_window_seconds: float, max_window_mb: float, run_dir: Optional[Path],
        script_and_args: tuple[str, ...]) -> None:
    """Profile an unmodified training script: idlehound run train.py [args...]."""
    from .capture._signals import EXIT_SIGINT, EXIT_SIGTERM, Terminated, sigterm_raises

    sigterm_raises()  # from here a SIGTERM (timeout, a scheduler) is handled like Ctrl-C
    res = None
    try:
        res = _capture(module, logdir, run_name, skip, warmup, active, step_on, stop_after, no_stack,
                       profile_memory, nproc, max_window_seconds, max_window_mb, run_dir, script_and_args)
        _report_capture(res, nproc, run_dir, no_report)
    except IdlehoundError as e:
        _fail(str(e))
    except (KeyboardInterrupt, Terminated) as e:
        code, what = (EXIT_SIGINT, "interrupted") if isinstance(e, KeyboardInterrupt) else \
            (EXIT_SIGTERM, "terminated (SIGTERM)")
        _fail(f"{what} before the script started; nothing was captured" if res is None else
              f"analysis {what}; the trace is saved: idlehound analyze {res.run_dir}", code)
    sys.exit(res.exit_code)


def _capture(module, logdir, run_name, skip, warmup, active, step_on, stop_after, no_stack, profile_memory,
             nproc, max_window_seconds, max_window_mb, run_dir, script_and_args):
    from .capture import CaptureOptions, run_script
    from .capture._folders import check_run_name
    from .capture._runner import run_distributed

    if module is None and not script_and_args:
        raise IdlehoundError("run: give a script (idlehound run train.py ...) or -m module")
    if skip < 0 or warmup < 0 or active < 1:
        raise IdlehoundError("run: --skip and --warmup must be >= 0 and --active >= 1")
    if not (max_window_seconds >= 0 and max_window_mb >= 0):  # also refuses nan
        raise IdlehoundError("run: --max-window-seconds and --max-window-mb must be >= 0 (0: no limit)")
    if run_name is not None:
        check_run_name(run_name)
    target, args = (module, list(script_and_args)) if module else (script_and_args[0], list(script_and_args[1:]))
    opts = CaptureOptions(logdir=logdir, run_name=run_name, skip=skip, warmup=warmup, active=active,
                          step_on=step_on, stop_after=stop_after, with_stack=not no_stack,
                          profile_memory=profile_memory, run_dir=run_dir, max_window_seconds=max_window_seconds,
                          max_window_mb=max_window_mb)
    if nproc is not None and nproc > 1:
        flags = ["--skip", str(skip), "--warmup", str(warmup), "--active", str(active), "--step-on", step_on,
                 "--max-window-seconds", str(max_window_seconds), "--max-window-mb", str(max_window_mb)]
        flags += ["--stop-after"] * stop_after + ["--no-stack"] * no_stack + ["--memory"] * profile_memory
        return run_distributed(target, args, nproc, module is not None, opts, flags)
    return run_script(target, args, module=module is not None, opts=opts)


def _report_capture(res, nproc: Optional[int], run_dir: Optional[Path], no_report: bool) -> None:
    from .capture._runner import wait_for_ranks
    from .capture.report_run import analyze_run, report_ranks

    if (nproc or 1) > 1 or res.rank is not None:
        if res.rank in (None, 0) and run_dir is None and not no_report:
            if res.rank == 0:  # launched by the user's torchrun: wait for the other ranks' traces
                wait_for_ranks(res.run_dir, int(os.environ.get("WORLD_SIZE", "1")))
            report_ranks(res.run_dir)
    elif not res.traces:
        click.echo(f"idlehound: no trace was captured: {_why_no_trace(res.run_dir)}", err=True)
    elif not no_report:
        analyze_run(res.run_dir)


def _why_no_trace(run_dir: Path) -> str:
    """Name the reason the window was never recorded, from what run.json knows."""
    try:
        info = json.loads((run_dir / "run.json").read_text())
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
            how = f"the script failed first ({how})"
        return f"{how} after {steps} step(s), before the window began at step {start}"
    if facts.get("child_processes") and steps == 0:
        return (f"the script trains in {facts['child_processes']} child process(es) (multiprocessing, mp.spawn); "
                "idlehound profiles the process it starts: use idlehound.profile() inside the worker")
    if sched.get("step_on") not in ("optimizer", "dataloader", "manual", None) and steps == 0:
        return f"no function named {sched['step_on']!r} returned in the main thread: check --step-on"
    if sched.get("step_on") == "optimizer" and not facts.get("optimizer_steps"):
        return ("no optimizer.step() was called, so no step ended: use --step-on dataloader, or --step-on NAME "
                "of the function that runs one step")
    if steps < start:
        return (f"the script made {steps} step(s); the window starts after {start} "
                "(lower --skip/--warmup, or check --step-on)")
    cut = (info.get("window") or {}).get("cut_by", "")
    return f"the window was ended by {cut} during the profiler's warm-up; lower --warmup"


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), default=Path("report.html"), show_default=True,
              help="Report file: .html, .md or .json.")
@click.option("--run", default=None, help="Run folder inside a log dir.")
@click.option("--worker", default=None, help="Worker inside the run.")
@click.option("--force", is_flag=True, help="Overwrite an existing report file (never the input trace).")
@_guard
def report(path: Path, output: Path, run: Optional[str], worker: Optional[str], force: bool = False) -> None:
    """Write a report file for a run folder or trace."""
    from .pipeline import analyze_path
    from .report.files import check_output, write_report

    check_output(output, force, [path])
    res = analyze_path(path, run=run, worker=worker)
    click.echo(str(write_report(res.doc, output, force, [path])))


@main.command()
@click.option("--device", default=None, help="cuda or cpu (default: cuda when available).")
@click.option("--data", type=click.Path(path_type=Path), default=None,
              help="Folder holding cifar-10-batches-py (default: a synthetic copy in that format).")
@click.option("--logdir", type=click.Path(path_type=Path), default=Path("log"), show_default=True)
@click.option("--steps", type=int, default=None, help="Training steps in all (default: enough for the window).")
@click.option("--batch-size", type=int, default=None, help="Override the baseline's batch size (32).")
@_guard
def demo(device: Optional[str], data: Optional[Path], logdir: Path, steps: Optional[int],
         batch_size: Optional[int]) -> None:
    """Profile the built-in baseline: ResNet18 on CIFAR10 at 224, batch 32, one loader worker, fp32."""
    from .demo import run_demo

    run_demo(device=device, data=data, logdir=logdir, steps=steps, batch_size=batch_size)


@main.command()
@click.option("--device", default=None, help="cuda or cpu (default: cuda when available).")
@click.option("--rungs", default=None, help="Comma-separated rungs (default: all): " + "baseline,loader,amp,"
              "channels_last,gpu_preprocess,compile,cuda_graphs")
@click.option("--steps", type=int, default=50, show_default=True, help="Timed steps per rung.")
@click.option("--warmup", type=int, default=10, show_default=True, help="Untimed steps before timing.")
@click.option("--batch-sizes", default="128,256", show_default=True, help="Batch sizes tried by the AMP rung.")
@click.option("--workers", default=None, help="Worker counts tried by the loader rung (default: 50-75% of cores).")
@click.option("--data", type=click.Path(path_type=Path), default=None, help="Folder with cifar-10-batches-py.")
@click.option("--logdir", type=click.Path(path_type=Path), default=Path("log"), show_default=True)
@click.option("--no-ceiling", is_flag=True, help="Skip the in-memory ceiling.")
@click.option("--json", "as_json", is_flag=True, help="Print the ladder as JSON.")
@_guard
def ladder(device, rungs, steps, warmup, batch_sizes, workers, data, logdir, no_ceiling, as_json) -> None:
    """Run the optimisation ladder on the ResNet18/CIFAR10 workload and measure each rung."""
    from .ladder import RUNGS, LadderOptions, ladder_doc, run_ladder
    from .report.ladder import render_ladder

    chosen = [r.strip() for r in rungs.split(",")] if rungs else list(RUNGS)
    bad = [r for r in chosen if r not in RUNGS]
    if bad:
        raise IdlehoundError(f"ladder: unknown rung(s) {', '.join(bad)} (rungs: {', '.join(RUNGS)})")
    try:
        bs = tuple(int(b) for b in batch_sizes.split(","))
        ws = [int(w) for w in workers.split(",")] if workers else None
    except ValueError:
        raise IdlehoundError("ladder: --batch-sizes and --workers take comma-separated integers") from None
    opts = LadderOptions(device=device or "", rungs=chosen, steps=steps, warmup=warmup, batch_sizes=bs,
                         workers=ws, data=str(data) if data else None, logdir=logdir, ceiling=not no_ceiling)
    results, run_dir = run_ladder(opts)
    doc = ladder_doc(results, opts.device)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        render_ladder(doc)
    click.echo(f"idlehound: ladder folder {run_dir}", err=True)


@main.command()
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None, help="Write .md, .json or .html.")
@click.option("--force", is_flag=True, help="Overwrite an existing -o file (never an input trace).")
@_guard
def compare(a: Path, b: Path, as_json: bool, output: Optional[Path], force: bool = False) -> None:
    """Compare two runs or traces: metrics, breakdown, kernels, memory, and findings gone or new."""
    from .compare import compare_docs, render_compare_markdown
    from .pipeline import analyze_path
    from .report.files import check_output, write_compare

    if output is not None:
        check_output(output, force, [a, b])
    doc = compare_docs(analyze_path(a).doc, analyze_path(b).doc)
    if output is not None:
        write_compare(doc, output, force, [a, b])
    click.echo(json.dumps(doc, indent=2) if as_json else render_compare_markdown(doc))


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print findings as JSON.")
@click.option("--trace", type=click.Path(path_type=Path), default=None,
              help="A run or trace of this code: join each finding to its measured GPU idle.")
@_guard
def lint(paths: tuple[Path, ...], as_json: bool, trace: Optional[Path]) -> None:
    """Statically check training code for lines that make the GPU wait (exit 1 when any are found)."""
    from .lint import join_costs, lint_paths, measured_doc

    found = lint_paths(list(paths))
    doc = measured_doc(trace)
    costs = join_costs(found, doc) if doc else {}
    if as_json:
        rows = [{**f.to_json(), "measured_idle_ms_per_step": costs.get((f.file, f.line))} for f in found]
        click.echo(json.dumps({"schema": "idlehound/lint", "schema_version": 1, "findings": rows}, indent=2))
    else:
        for f in found:
            cost = costs.get((f.file, f.line))
            measured = f" [measured: {cost:.3f} ms GPU idle per step]" if cost is not None else ""
            click.echo(f"{f.file}:{f.line}:{f.col + 1}: {f.rule} {f.info.name}: {f.info.why}{measured}")
            click.echo(f"    {f.text}\n    fix: {f.info.fix}")
        sys.stdout.flush()
        click.echo(f"{len(found)} finding(s) in {len({f.file for f in found})} file(s)" if found else
                   "no findings", err=True)
    sys.exit(1 if found else 0)


@contextlib.contextmanager
def _tune_progress():
    """A progress bar on stderr naming the variant that runs; plain lines when stderr is not a terminal."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .tune import print_progress

    console = Console(stderr=True)
    if not console.is_terminal:
        yield print_progress
        return
    bar = Progress(TextColumn("idlehound tune"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("{task.description}"), console=console, transient=True)
    task = bar.add_task("", total=None)
    with bar:
        yield lambda message, done, total: bar.update(task, description=message, completed=done,
                                                      total=total or None)


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--steps", type=int, default=100, show_default=True, help="Timed optimizer steps per variant.")
@click.option("--skip", type=int, default=20, show_default=True,
              help="Untimed warm-up steps per variant (at least twice the batches its loader holds in flight).")
@click.option("--try", "try_", default="", help="Comma-separated candidates to try (default: from the diagnosis).")
@click.option("--skip-candidate", default="", help="Comma-separated candidates not to try.")
@click.option("--no-diagnose", is_flag=True, help="Do not profile first; try only --try candidates.")
@click.option("--min-rounds", type=int, default=3, show_default=True,
              help="Interleaved runs of each variant and its reference before its 95% interval may stop it.")
@click.option("--max-rounds", type=int, default=5, show_default=True,
              help="Most runs of each variant while its interval is wider than +-2%.")
@click.option("--child-timeout", type=int, default=900, show_default=True,
              help="Seconds one run of the script (start-up, warm-up and timed steps) may take.")
@click.option("--logdir", type=click.Path(path_type=Path), default=Path("log"), show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.argument("script_and_args", nargs=-1, required=True, type=click.UNPROCESSED)
@_guard
def tune(steps, skip, try_, skip_candidate, no_diagnose, min_rounds, max_rounds, child_timeout, logdir, as_json,
         script_and_args) -> None:
    """Apply the fixes to an unmodified script, time each in rounds interleaved with the script as written
    (a 95% interval per speed-up), and check the losses still match."""
    from .tune import TuneOptions, run_tune
    from .tune.report import render_tune

    if steps < 2 or skip < 1:
        raise IdlehoundError("tune: --steps must be >= 2 and --skip >= 1")
    if not 2 <= min_rounds <= max_rounds or child_timeout < 1:
        raise IdlehoundError("tune: need 2 <= --min-rounds <= --max-rounds and --child-timeout >= 1")
    opts = TuneOptions(steps=steps, skip=skip, try_=[t for t in try_.split(",") if t],
                       skip_candidates=[t for t in skip_candidate.split(",") if t], logdir=logdir,
                       diagnose=not no_diagnose, timeout_s=child_timeout, min_rounds=min_rounds,
                       max_rounds=max_rounds)
    with _tune_progress() as progress:
        doc = run_tune(script_and_args[0], list(script_and_args[1:]), opts, progress)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        render_tune(doc)
    click.echo(f"idlehound: tune folder {doc['run_dir']}", err=True)


@main.command()
@_guard
def doctor() -> None:
    """Check the environment: CUDA, versions, CUPTI recording, NVML, TensorBoard."""
    from .doctor import run_checks

    ok = run_checks()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
