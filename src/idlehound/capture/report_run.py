"""After a capture: analyse the run folder and print the report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

from ..errors import IdlehoundError


def analyze_run(run_dir: Path, print_report: bool = True, html: bool = True) -> Optional[object]:
    from ..pipeline import analyze_path

    try:
        res = analyze_path(run_dir)
    except IdlehoundError as e:
        sys.stderr.write(f"idlehound: {e}\n")
        return None
    try:
        from ..report.files import write_report

        write_report(res.doc, run_dir / "report.json")
        write_report(res.doc, run_dir / "report.md")
        if html:
            write_report(res.doc, run_dir / "report.html")
        from ..report.tensorboard import scalars_of, write_scalars

        why = write_scalars(run_dir, scalars_of(res.doc))
        if why:
            res.analysis.notes.append(why)
    except Exception as e:  # a report writer failed: the analysis is still printed
        sys.stderr.write(f"idlehound: could not write report files: {e}\n")
    if print_report:
        from ..report.terminal import render

        render(res.doc)
        sys.stderr.write(f"idlehound: run folder {run_dir}\n")
    return res
