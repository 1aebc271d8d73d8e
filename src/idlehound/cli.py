"""Command line: parses arguments and calls the application layer (idlehound.app).

A command with many options hands them on by name (`**options`): each option's parameter name is the app
function's, so the list is written once, in the decorators.

Exit codes: 0 ok, 1 gate failed, 2 bad input."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import click

from . import _startup, app, settings
from ._version import __version__
from .capture import CaptureOptions
from .errors import IdlehoundError, caused_by


def _fail(msg: str, code: int = 2) -> None:
    if code == _startup.EXIT_SIGINT:
        _startup.ignore_interrupts()  # one Ctrl-C is enough; a second must not cut the message or the exit code
    from .report import visible

    click.echo(f"idlehound: {visible(msg)}", err=True)  # a message may quote a name from a trace
    sys.exit(code)


def _guard(fn: Callable[..., None]) -> Callable[..., None]:
    """Typed errors become one line on stderr and exit 2; never a traceback for bad input."""
    import functools

    @functools.wraps(fn)
    def wrapper(*a: Any, **kw: Any) -> None:
        try:
            fn(*a, **kw)
        except IdlehoundError as e:
            _fail(str(e))
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except Exception as e:  # a bug: say so in one line unless debugging
            if caused_by(e, KeyboardInterrupt):  # 3.11 wraps one raised in __set_name__ while importing
                _fail("interrupted", 130)
            if settings.DEBUG.get():
                raise
            _fail(f"internal error: {type(e).__name__}: {e} (set IDLEHOUND_DEBUG=1 for the traceback)", 3)

    return wrapper


class _Group(click.Group):
    def main(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().main(*args, **kwargs)
        finally:  # click always leaves through SystemExit here; the code is decided
            _startup.ignore_interrupts()

    def invoke(self, ctx: click.Context) -> Any:
        """A Ctrl-C anywhere in a command exits 130, as a shell expects, not click's "Aborted!" and 1."""
        try:
            _startup.restore()
            settings.check_all()  # a bad IDLEHOUND_* value: one line naming it, exit 2, before any work
            return super().invoke(ctx)
        except IdlehoundError as e:
            _fail(str(e))
        except KeyboardInterrupt:
            _fail("interrupted", 130)


def _capture_option(flag: str, kind: Any, text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """An option of `run` whose default, shown in --help, is CaptureOptions' field of the same name."""
    default = getattr(CaptureOptions, flag.lstrip("-").replace("-", "_"))
    return click.option(flag, type=kind, default=default, show_default=True, help=text)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="idlehound")
def main() -> None:
    """Catch a GPU slacking during PyTorch training, name why, and point at the line.

    Environment variables (IDLEHOUND_JOBS, IDLEHOUND_MAX_TRACE_BYTES, ...): docs/environment.md."""


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report instead of the summary.")
@click.option("--step", type=int, default=None, help="Analyse only ProfilerStep#N.")
@click.option("--run", default=None, help="Run folder inside a log dir (default: the newest).")
@click.option("--worker", default=None, help="Worker (trace file prefix) inside the run.")
@click.option(
    "--fail-under",
    "fail_under",
    multiple=True,
    metavar="METRIC=VALUE",
    help="Exit 1 when a metric is below VALUE, e.g. gpu_util=70 (repeatable).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="Also write the report: .json, .md or .html by extension (with --ranks: .json or .html).",
)
@click.option("--ranks", is_flag=True, help="Compare every rank of a distributed run: straggler and waits.")
@click.option(
    "--engine",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="With --ranks: processes of this machine, or Ray tasks where the traces are (the ray extra).",
)
@click.option(
    "--address", default=None, help="With --engine ray: the Ray cluster (default: RAY_ADDRESS, else local)."
)
@click.option("--force", is_flag=True, help="Overwrite an existing -o file (never the input trace).")
@_guard
def analyze(**options: Any) -> None:
    """Analyse a torch.profiler trace (.pt.trace.json[.gz]) or a TensorBoard log dir."""
    code = app.analyze(**options)
    if code:
        sys.exit(code)


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-m", "module", default=None, metavar="MODULE", help="Run a module, like python -m.")
@_capture_option("--logdir", click.Path(path_type=Path), "Folder for run folders (TensorBoard layout).")
@click.option("--name", "run_name", default=None, help="Run name prefix (default: the script name).")
@_capture_option("--skip", int, "Steps to run before profiling (warm-up, compile).")
@_capture_option("--warmup", int, "Profiler warm-up steps (recorded, discarded).")
@_capture_option("--active", int, "Steps to record.")
@_capture_option("--step-on", None, "What ends a step: optimizer, dataloader, or a function name.")
@click.option("--stop-after", is_flag=True, help="End the script once the window is captured.")
@click.option(
    "--no-stack", is_flag=True, help="Do not record Python stacks (less overhead, no source lines)."
)
@click.option("--memory", "profile_memory", is_flag=True, help="Record memory allocations.")
@click.option(
    "--no-report", is_flag=True, help="Neither analyse the run at the end nor write report.*: capture only."
)
@click.option(
    "--nproc", type=int, default=None, help="Launch N processes through torchrun (torch.distributed)."
)
@_capture_option(
    "--max-window-seconds", float, "Cut the profiled window when it records longer than this (0: no limit)."
)
@_capture_option(
    "--max-window-mb",
    float,
    "Cut the profiled window when the process grows by more than this while recording (0: no limit).",
)
@click.option("--run-dir", type=click.Path(path_type=Path), default=None, hidden=True)
# Long runs (docs/long-runs.md): later windows on demand (`idlehound capture`) or on a slowdown.
@click.option(
    "--watch", is_flag=True, help="Keep the job open to later windows: idlehound capture, --capture-*."
)
@click.option("--capture-when", default=None, metavar="slower=R", help="A window when steps get R x slower.")
@click.option("--capture-every", type=int, default=None, metavar="STEPS", help="A window every STEPS steps.")
@click.option(
    "--max-windows", type=int, default=10, show_default=True, help="At most this many later windows."
)
@click.option("--max-windows-mb", type=float, default=2048.0, show_default=True, help="Disk cap of windows/.")
@click.argument("script_and_args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def run(ctx: click.Context, /, **options: Any) -> None:
    """Profile an unmodified training script: idlehound run [OPTIONS] train.py [args...].

    idlehound's options go before the script: everything after the script's name is the script's own
    arguments (`idlehound run train.py --skip 3` hands --skip to train.py)."""
    ours = [o for p in ctx.command.params for o in getattr(p, "opts", []) if o.startswith("--")]
    args = options["script_and_args"]
    if options["module"] is None and args and args[0].startswith("-"):
        _fail(app.unknown_option(args[0], ours))
    for line in app.misplaced_options(options["module"], args, ours):
        click.echo(f"idlehound: {line}", err=True)
    code, message = app.run(app.RunOptions(**options))
    if message is not None:
        _fail(message, code)
    sys.exit(code)


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=Path("report.html"),
    show_default=True,
    help="Report file: .html, .md or .json; or NAME.pt.trace.json[.gz]: the trace with idlehound's tracks "
    "(idle gaps by cause and line, findings, predicted steps, waits) for Perfetto or chrome://tracing.",
)
@click.option("--run", default=None, help="Run folder inside a log dir.")
@click.option("--worker", default=None, help="Worker inside the run.")
@click.option("--force", is_flag=True, help="Overwrite an existing report file (never the input trace).")
@_guard
def report(path: Path, output: Path, run: Optional[str], worker: Optional[str], force: bool = False) -> None:
    """Write a report file for a run folder or trace."""
    click.echo(str(app.report(path, output, run, worker, force)))


@main.command()
@click.argument("run_folder", type=click.Path(path_type=Path))
@click.option("--steps", type=int, default=5, show_default=True, help="Steps the window records.")
@click.option(
    "--wait", "wait_s", type=float, default=300.0, show_default=True, help="Seconds to wait for it (0: none)."
)
@_guard
def capture(run_folder: Path, steps: int, wait_s: float) -> None:
    """Ask a job started with `idlehound run --watch` for a window at its next steps."""
    click.echo(app.capture_window(run_folder, steps, wait_s))


@main.command()
@click.option("--device", default=None, help="cuda or cpu (default: cuda when available).")
@click.option(
    "--data",
    type=click.Path(path_type=Path),
    default=None,
    help="Folder holding cifar-10-batches-py (default: a synthetic copy in that format).",
)
@click.option("--logdir", type=click.Path(path_type=Path), default=Path("log"), show_default=True)
@click.option(
    "--steps", type=int, default=None, help="Training steps in all (default: enough for the window)."
)
@click.option("--batch-size", type=int, default=None, help="Override the baseline's batch size (32).")
@_guard
def demo(
    device: Optional[str], data: Optional[Path], logdir: Path, steps: Optional[int], batch_size: Optional[int]
) -> None:
    """Profile the built-in baseline: ResNet18 on CIFAR10 at 224, batch 32, one loader worker, fp32."""
    app.demo(device, data, logdir, steps, batch_size)


@main.command()
@click.option("--device", default=None, help="cuda or cpu (default: cuda when available).")
@click.option(
    "--rungs",
    default=None,
    help="Comma-separated rungs (default: all): " + "baseline,loader,amp,"
    "channels_last,gpu_preprocess,compile,cuda_graphs",
)
@click.option(
    "--steps", type=int, default=None, help="Timed steps per rung (default: 50 on a GPU, 8 on a CPU)."
)
@click.option(
    "--warmup", type=int, default=None, help="Untimed steps before timing (default: 10 on a GPU, 2 on a CPU)."
)
@click.option(
    "--batch-sizes", default="128,256", show_default=True, help="Batch sizes tried by the AMP rung."
)
@click.option(
    "--workers", default=None, help="Worker counts tried by the loader rung (default: 50-75% of cores)."
)
@click.option(
    "--data", type=click.Path(path_type=Path), default=None, help="Folder with cifar-10-batches-py."
)
@click.option("--logdir", type=click.Path(path_type=Path), default=Path("log"), show_default=True)
@click.option("--no-ceiling", is_flag=True, help="Skip the in-memory ceiling.")
@click.option("--json", "as_json", is_flag=True, help="Print the ladder as JSON.")
@_guard
def ladder(**options: Any) -> None:
    """Run the optimisation ladder on the ResNet18/CIFAR10 workload and measure each rung."""
    app.ladder(**options)


@main.command()
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), default=None, help="Write .md, .json or .html."
)
@click.option("--force", is_flag=True, help="Overwrite an existing -o file (never an input trace).")
@_guard
def compare(a: Path, b: Path, as_json: bool, output: Optional[Path], force: bool = False) -> None:
    """Compare two runs or traces: metrics, breakdown, kernels, memory, and findings gone or new."""
    app.compare(a, b, as_json, output, force)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print findings as JSON (the same as --format json).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "github", "sarif", "json"]),
    default="text",
    show_default=True,
    help="text; github: workflow annotations; sarif: SARIF 2.1.0 for code scanning; json.",
)
@click.option(
    "--trace",
    type=click.Path(path_type=Path),
    default=None,
    help="A run or trace of this code: join each finding to its measured GPU idle.",
)
@_guard
def lint(paths: tuple[Path, ...], as_json: bool, fmt: str, trace: Optional[Path]) -> None:
    """Statically check training code for lines that make the GPU wait (exit 1 when any are found)."""
    sys.exit(app.lint(paths, as_json, trace, fmt))


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--steps", type=int, default=100, show_default=True, help="Timed optimizer steps per variant.")
@click.option(
    "--skip",
    type=int,
    default=20,
    show_default=True,
    help="Untimed warm-up steps per variant (at least twice the batches its loader holds in flight).",
)
@click.option(
    "--try", "try_", default="", help="Comma-separated candidates to try (default: from the diagnosis)."
)
@click.option("--skip-candidate", default="", help="Comma-separated candidates not to try.")
@click.option("--no-diagnose", is_flag=True, help="Do not profile first; try only --try candidates.")
@click.option(
    "--min-rounds",
    type=int,
    default=3,
    show_default=True,
    help="Interleaved runs of each variant and its reference before its 95% interval may stop it.",
)
@click.option(
    "--max-rounds",
    type=int,
    default=5,
    show_default=True,
    help="Most runs of each variant while its interval is wider than +-2%.",
)
@click.option(
    "--child-timeout",
    type=int,
    default=900,
    show_default=True,
    help="Seconds one run of the script (start-up, warm-up and timed steps) may take.",
)
@click.option(
    "--budget",
    type=float,
    default=None,
    help="Seconds for the whole tune: candidates (most promising first) that would not fit are not tried; "
    "under it a candidate whose interval is decided after two rounds leaves early.",
)
@click.option("--logdir", type=click.Path(path_type=Path), default=Path("log"), show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.argument("script_and_args", nargs=-1, required=True, type=click.UNPROCESSED)
@_guard
def tune(**options: Any) -> None:
    """Apply the fixes to an unmodified script, time each in rounds interleaved with the script as written
    (a 95% interval per speed-up), and check the losses still match."""
    app.tune(**options)


@main.command()
@_guard
def doctor() -> None:
    """Check the environment: CUDA, versions, CUPTI recording, NVML, TensorBoard."""
    sys.exit(app.doctor())


if __name__ == "__main__":
    main()
