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

        write_report(res.doc, run_dir / "report.json", force=True)  # the run's own folder: its reports
        write_report(res.doc, run_dir / "report.md", force=True)
        if html:
            write_report(res.doc, run_dir / "report.html", force=True)
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


def report_ranks(run_dir: Path, print_report: bool = True) -> Optional[dict]:
    """Compare the ranks of a multi-process run; write ranks.json and ranks.html; complete run.json."""
    import json

    from ..distributed import analyze_ranks, render_ranks, render_ranks_html
    from ..report.model import encode

    try:
        doc = analyze_ranks(run_dir)
    except IdlehoundError as e:
        sys.stderr.write(f"idlehound: {e}\n")
        return None
    (run_dir / "ranks.json").write_text(encode(doc))
    (run_dir / "ranks.html").write_text(render_ranks_html(doc), encoding="utf-8")
    run_json = run_dir / "run.json"
    if run_json.exists():  # the launcher's run.json: add what only the traces know
        info = json.loads(run_json.read_text())
        info.update(world_size=doc["world_size"], backend=doc["backend"],
                    straggler=(doc["straggler"] or {}).get("rank"))
        run_json.write_text(json.dumps(info, indent=2))
    if print_report:
        render_ranks(doc)
        sys.stderr.write(f"idlehound: run folder {run_dir}\n")
    return doc
