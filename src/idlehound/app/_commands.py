"""What `analyze`, `report`, `compare`, `ladder`, `lint`, `tune`, `demo` and `doctor` do, end to end.

Each takes the parsed options, does the work, prints to stdout/stderr as the command does, and returns the
exit code. Typed errors (IdlehoundError) go up to the caller, which prints them on one line (exit 2).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Callable, Optional

import click

from ..errors import IdlehoundError
from ..report.model import Report, encode


def analyze(
    path: Path,
    as_json: bool,
    step: Optional[int],
    run: Optional[str],
    worker: Optional[str],
    fail_under: tuple[str, ...],
    output: Optional[Path],
    ranks: bool,
    force: bool = False,
    engine: str = "local",
    address: Optional[str] = None,
) -> int:
    """`idlehound analyze`: 1 when a --fail-under gate failed, else 0."""
    from ..pipeline import analyze_path, failed_gates, parse_gates
    from ..report import check_output

    if ranks:
        analyze_ranks(path, as_json, output, force, engine, address)
        return 0
    if engine != "local" or address is not None:
        raise IdlehoundError("--engine and --address go with --ranks")
    gates = parse_gates(fail_under)
    if output is not None:
        check_output(output, force, [path])  # before the analysis: a refused -o costs nothing
    res = analyze_path(path, run=run, worker=worker, step=step)
    if output is not None:
        from ..report import write

        write(res.report, output, force=force, inputs=[path])
    if as_json:
        click.echo(encode(res.report))
    else:
        from ..report import render

        render(res.report)
    failed = failed_gates(res.report, gates)
    if failed:
        click.echo("idlehound: gate failed: " + "; ".join(failed), err=True)
        if os.environ.get("GITHUB_ACTIONS") == "true":  # on GitHub: an error annotation on the run's summary
            click.echo(gate_annotation(res.report, failed), err=as_json)  # stdout unless it carries the JSON
        return 1
    return 0


def gate_annotation(doc: Report, failed: list[str]) -> str:
    """The failed gates as one GitHub error annotation, at the top finding's line when the trace names one."""
    from ..report import annotation

    top = next((f.location for f in doc.findings if f.location), None)
    message = f"{'; '.join(failed)}. {doc.headline}"
    if top is None:
        return annotation("error", message, title="idlehound --fail-under")
    return annotation("error", message, title="idlehound --fail-under", file=top.file, line=top.line)


def analyze_ranks(
    path: Path,
    as_json: bool,
    output: Optional[Path],
    force: bool = False,
    engine: str = "local",
    address: Optional[str] = None,
) -> None:
    """`idlehound analyze --ranks`: every rank of a distributed run, the straggler and why."""
    from ..distributed import ranks_report
    from ..report import check_output, render_ranks, write

    if output is not None:
        check_output(output, force, [path])
    doc = ranks_report(path, engine=engine, address=address)
    if output is not None:
        write(doc, output, force=force, inputs=[path])
    if as_json:
        click.echo(encode(doc))
    else:
        render_ranks(doc)


def report(path: Path, output: Path, run: Optional[str], worker: Optional[str], force: bool = False) -> Path:
    """`idlehound report`: the report file written."""
    from ..pipeline import analyze_path
    from ..report import (
        check_annotated_output,
        check_output,
        is_annotated_name,
        write,
        write_annotated,
    )

    annotated = is_annotated_name(output)
    (check_annotated_output if annotated else check_output)(output, force, (path,))
    from ._watch import report_run_name, show_curve, step_curve

    res = analyze_path(path, run=report_run_name(path, run), worker=worker)
    if annotated:  # the trace itself with idlehound's tracks, for Perfetto / chrome://tracing
        return write_annotated(res.analysis, res.findings, output, force, (path,))[0]
    curve = step_curve(path, res.doc) if path.is_dir() else None  # the whole run's steps (--watch's windows)
    show_curve(curve)
    return write(res.report, output, force=force, inputs=[path], step_curve=curve)


def compare(a: Path, b: Path, as_json: bool, output: Optional[Path], force: bool = False) -> None:
    """`idlehound compare A B`."""
    from ..compare import compare_model
    from ..pipeline import analyze_path
    from ..report import check_output, render_compare, write

    if output is not None:
        check_output(output, force, [a, b])
    doc = compare_model(analyze_path(a).report, analyze_path(b).report)
    if output is not None:
        write(doc, output, force=force, inputs=[a, b])
    if as_json:
        click.echo(encode(doc))
    else:
        render_compare(doc)


def ladder(
    device: Optional[str],
    rungs: Optional[str],
    steps: Optional[int],
    warmup: Optional[int],
    batch_sizes: str,
    workers: Optional[str],
    data: Optional[Path],
    logdir: Path,
    no_ceiling: bool,
    as_json: bool,
) -> None:
    """`idlehound ladder`: run the rungs, print the table, name the folder."""
    from ..ladder import (
        CPU_STEPS,
        CPU_WARMUP,
        GPU_STEPS,
        GPU_WARMUP,
        RUNGS,
        LadderOptions,
        ladder_doc,
        run_ladder,
    )
    from ..report import render_ladder
    from ..workloads.resnet import default_device

    chosen = [r.strip() for r in rungs.split(",")] if rungs else list(RUNGS)
    bad = [r for r in chosen if r not in RUNGS]
    if bad:
        raise IdlehoundError(f"ladder: unknown rung(s) {', '.join(bad)} (rungs: {', '.join(RUNGS)})")
    try:
        bs = tuple(int(b) for b in batch_sizes.split(","))
        ws = [int(w) for w in workers.split(",")] if workers else None
    except ValueError:
        raise IdlehoundError("ladder: --batch-sizes and --workers take comma-separated integers") from None
    device = device or default_device()
    cpu = device == "cpu"  # a quick look by default: a CPU step takes 10-100x a GPU's
    opts = LadderOptions(
        device=device,
        rungs=chosen,
        steps=steps if steps is not None else CPU_STEPS if cpu else GPU_STEPS,
        warmup=warmup if warmup is not None else CPU_WARMUP if cpu else GPU_WARMUP,
        batch_sizes=bs,
        workers=ws,
        data=str(data) if data else None,
        logdir=logdir,
        ceiling=not no_ceiling,
        chosen=bool(rungs),
    )
    results, run_dir = run_ladder(opts)
    doc = ladder_doc(results, opts.device)
    if as_json:
        click.echo(encode(doc))
    else:
        render_ladder(doc)
    click.echo(f"idlehound: ladder folder {run_dir}", err=True)


def lint(paths: tuple[Path, ...], as_json: bool, trace: Optional[Path], fmt: str = "text") -> int:
    """`idlehound lint`: 1 when anything was found. `--json` is `--format json`."""
    from ..lint import join_costs, lint_paths, measured_doc, render, summary

    found = lint_paths(list(paths))
    doc = measured_doc(trace)
    costs = join_costs(found, doc) if doc else {}
    fmt = "json" if as_json else fmt
    out = render(found, costs, fmt)
    if out or fmt != "text":
        click.echo(out)
    if fmt == "text":
        sys.stdout.flush()
        click.echo(summary(found, measured=doc is not None), err=True)
    return 1 if found else 0


@contextlib.contextmanager
def _tune_progress() -> Iterator[Callable[[str, int, int], None]]:
    """A progress bar on stderr naming the variant that runs; plain lines when stderr is not a terminal."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..tune import print_progress

    console = Console(stderr=True)
    if not console.is_terminal:
        yield print_progress
        return
    bar = Progress(
        TextColumn("idlehound tune"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
        transient=True,
    )
    task = bar.add_task("", total=None)
    with bar:
        yield lambda message, done, total: bar.update(
            task, description=message, completed=done, total=total or None
        )


def tune(
    steps: int,
    skip: int,
    try_: str,
    skip_candidate: str,
    no_diagnose: bool,
    min_rounds: int,
    max_rounds: int,
    child_timeout: int,
    logdir: Path,
    as_json: bool,
    script_and_args: tuple[str, ...],
    budget: Optional[float] = None,
) -> None:
    """`idlehound tune`: try the fixes on the script, print the table and the diff, name the folder."""
    from ..tune import TuneOptions, render_tune, run_tune

    if steps < 2 or skip < 1:
        raise IdlehoundError("tune: --steps must be >= 2 and --skip >= 1")
    if not 2 <= min_rounds <= max_rounds or child_timeout < 1:
        raise IdlehoundError("tune: need 2 <= --min-rounds <= --max-rounds and --child-timeout >= 1")
    if budget is not None and budget <= 0:
        raise IdlehoundError("tune: --budget must be > 0 seconds")
    opts = TuneOptions(
        steps=steps,
        skip=skip,
        try_=[t for t in try_.split(",") if t],
        skip_candidates=[t for t in skip_candidate.split(",") if t],
        logdir=logdir,
        diagnose=not no_diagnose,
        timeout_s=child_timeout,
        min_rounds=min_rounds,
        max_rounds=max_rounds,
        budget_s=budget,
    )
    with _tune_progress() as progress:
        doc = run_tune(script_and_args[0], list(script_and_args[1:]), opts, progress)
    if as_json:
        click.echo(encode(doc))
    else:
        render_tune(doc)
    click.echo(f"idlehound: tune folder {doc.run_dir}", err=True)


def demo(
    device: Optional[str], data: Optional[Path], logdir: Path, steps: Optional[int], batch_size: Optional[int]
) -> None:
    """`idlehound demo`: the built-in baseline under capture."""
    from ._demo import run_demo

    run_demo(device=device, data=data, logdir=logdir, steps=steps, batch_size=batch_size)


def doctor() -> int:
    """`idlehound doctor`: 1 when a check failed."""
    from ..doctor import run_checks

    return 0 if run_checks() else 1
