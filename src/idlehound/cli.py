"""Command line: parses arguments and calls the library. Exit codes: 0 ok, 1 gate failed, 2 bad input."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Optional

import click

from . import __version__
from .errors import IdlehoundError


def _fail(msg: str, code: int = 2) -> None:
    click.echo(f"idlehound: {msg}", err=True)
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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
              help="Also write the report: .json, .md or .html by extension.")
@_guard
def analyze(path: Path, as_json: bool, step: Optional[int], run: Optional[str], worker: Optional[str],
            fail_under: tuple[str, ...], output: Optional[Path]) -> None:
    """Analyse a torch.profiler trace (.pt.trace.json[.gz]) or a TensorBoard log dir."""
    from .pipeline import analyze_path, failed_gates, parse_gates

    gates = parse_gates(fail_under)
    res = analyze_path(path, run=run, worker=worker, step=step)
    if output is not None:
        from .report.files import write_report

        write_report(res.doc, output)
    if as_json:
        click.echo(json.dumps(res.doc, indent=2))
    else:
        from .report.terminal import render

        render(res.doc)
    failed = failed_gates(res.doc, gates)
    if failed:
        click.echo("idlehound: gate failed: " + "; ".join(failed), err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
