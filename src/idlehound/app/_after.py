"""After a capture: analyse the run folder, write its reports and print the summary."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

from ..errors import IdlehoundError
from ..report.model import Ranks
from ..runfolder import RANKS_HTML, RANKS_JSON, REPORTS, update_run_json


def analyze_run(run_dir: Path, print_report: bool = True, html: bool = True) -> Optional[Any]:
    """The pipeline Result of a captured run folder (None when it cannot be analysed); writes report.*."""
    from ..pipeline import analyze_path
    from ..report.tensorboard import missing_note

    note = missing_note()  # known now, so the reports say it (the analysis is not changed once built)
    try:
        res = analyze_path(run_dir, notes=[note] if note else ())
    except IdlehoundError as e:
        sys.stderr.write(f"idlehound: {e}\n")
        return None
    try:
        from ..report import scalars_of, write, write_scalars

        for name in REPORTS if html else [n for n in REPORTS if not n.endswith(".html")]:
            write(res.report, run_dir / name, force=True)  # the run's own folder: its reports
        why = write_scalars(run_dir, scalars_of(res.report))
        if why and why != note:  # tensorboard found but not importable
            sys.stderr.write(f"idlehound: {why}\n")
    except Exception as e:  # a report writer failed: the analysis is still printed
        sys.stderr.write(f"idlehound: could not write report files: {e}\n")
    if print_report:
        from ..report import render

        render(res.report)
        sys.stderr.write(f"idlehound: run folder {run_dir}\n")
    return res


def report_ranks(run_dir: Path, print_report: bool = True) -> Optional[Ranks]:
    """Compare the ranks of a multi-process run; write ranks.json and ranks.html; complete run.json."""
    from ..distributed import ranks_report
    from ..report import render_ranks, write

    try:
        doc = ranks_report(run_dir)
    except IdlehoundError as e:
        sys.stderr.write(f"idlehound: {e}\n")
        return None
    for name in (RANKS_JSON, RANKS_HTML):
        write(doc, run_dir / name, force=True)  # the run's own folder: its reports
    update_run_json(
        run_dir,
        world_size=doc.world_size,
        backend=doc.backend,  # what only the traces know
        straggler=doc.straggler.rank if doc.straggler else None,
    )
    if print_report:
        render_ranks(doc)
        sys.stderr.write(f"idlehound: run folder {run_dir}\n")
    return doc
