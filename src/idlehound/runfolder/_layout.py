"""The names of the files in a run folder: the one place that knows them.

A run folder (what `idlehound run`, `idlehound.profile()`, `tune` and `ladder` write) holds:
    <worker>.<time_ns>.pt.trace.json.gz     the torch.profiler trace (tensorboard_trace_handler naming)
    <worker>.<time_ns>.sidecar.json.gz      exact source lines and stored source for that trace
    run.json, samples.json                  what capture knew and the whole-run utilisation curve
    run.rankN.json, samples.rankN.json      the same per rank of a multi-process job (worker rankN_<host>_<pid>)
    report.json/.md/.html, ranks.json/.html the reports written after the capture
    tune.json/.md/.html, ladder.json/.md/.html  what `idlehound tune` / `idlehound ladder` write in their folders
Traces named as Holistic Trace Analysis users name them (rank-0.json.gz, inference_rank_0.json) are read too.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

RUN = "run"
SAMPLES = "samples"
TRACE_SUFFIX = ".pt.trace.json.gz"
SIDECAR_SUFFIX = ".sidecar.json.gz"
TRACE_GLOB = "*" + TRACE_SUFFIX
RANK_RUN_GLOB = f"{RUN}.rank*.json"
REPORTS = ("report.json", "report.md", "report.html")
DOCUMENT_SUFFIXES = (".json", ".md", ".html")  # each document a folder holds: report, tune, ladder
RANKS_JSON = "ranks.json"
RANKS_HTML = "ranks.html"

# As torch's tensorboard_trace_handler names files: <worker>.<time_ns>.pt.trace.json[.gz]
TRACE_RE = re.compile(r"^(?P<worker>.*?)(?:\.(?P<stamp>\d+))?\.pt\.trace\.json(?:\.gz)?$")
# As Holistic Trace Analysis users name them: rank-0.json.gz, rank1.json, inference_rank_0.json.gz
RANK_FILE_RE = re.compile(
    r"^(?P<worker>(?:.*[-_])?rank[-_]?\d+)(?:\.(?P<stamp>\d+))?\.json(?:\.gz)?$", re.IGNORECASE
)
_TRACE_END = re.compile(r"\.pt\.trace\.json(\.gz)?$")
# The rank in a worker name: idlehound's rank0_<host>_<pid>, HTA's rank-0 / rank1 / inference_rank_0
RANK_RE = re.compile(r"(?:^|[-_])rank[-_]?(\d+)", re.IGNORECASE)


def match_trace(name: str) -> Optional[re.Match[str]]:
    """The worker and time stamp in a trace file name; None when the name is not a trace's."""
    return TRACE_RE.match(name) or RANK_FILE_RE.match(name)


def is_trace_name(name: str) -> bool:
    """A file name torch.profiler gave a trace (a report must never be written over one)."""
    return ".pt.trace." in name


def run_file(run_dir: Path, rank: Optional[int], stem: str = RUN) -> Path:
    """run.json / samples.json, or run.rank3.json for rank 3 of a multi-process job."""
    return run_dir / (f"{stem}.json" if rank is None else f"{stem}.rank{rank}.json")


def trace_file(run_dir: Path, worker: str, stamp: int) -> Path:
    return run_dir / f"{worker}.{stamp}{TRACE_SUFFIX}"


def sidecar_file(run_dir: Path, worker: str, stamp: int) -> Path:
    return run_dir / f"{worker}.{stamp}{SIDECAR_SUFFIX}"


def document_files(run_dir: Path, stem: str) -> tuple[Path, Path, Path]:
    """The JSON, markdown and HTML files of one document (stem 'report', 'tune' or 'ladder') in a folder."""
    json_file, md_file, html_file = (run_dir / (stem + s) for s in DOCUMENT_SUFFIXES)
    return json_file, md_file, html_file


def sidecar_path(trace_path: Path) -> Path:
    """The capture sidecar beside a trace (gzipped or not)."""
    stem = _TRACE_END.sub("", trace_path.name)
    gz = trace_path.with_name(stem + ".sidecar.json.gz")
    return gz if gz.exists() else trace_path.with_name(stem + ".sidecar.json")


def worker_name(base: str, rank: Optional[str]) -> str:
    """The worker name capture gives a process: rank3_<host>_<pid> for a rank of a multi-process job."""
    return f"rank{rank}_{base}" if rank is not None else base


def rank_of(worker: str) -> Optional[int]:
    """The rank a worker name carries (rank0_host_12, rank-0, inference_rank_0), else None."""
    m = RANK_RE.search(worker)
    return int(m.group(1)) if m else None


def run_info_rank(folder: Path, worker: str) -> Optional[int]:
    """The rank whose run.rankN.json describes this worker's trace; None: the folder's run.json does."""
    rank = rank_of(worker)
    return rank if rank is not None and run_file(folder, rank).is_file() else None


# What `idlehound run --watch` and the always-on step clock add (docs/long-runs.md):
#   steps.jsonl / steps.rankN.jsonl   one row per step (or per bin of steps past a limit), written as the job runs
#   control/request.json              a window asked for by `idlehound capture` or the slowdown trigger
#   control/ack.<id>.rankN.json       what each rank did with that request
#   windows/step<N>/                  each later window: its traces, sidecars, window.json and report.json
STEPS = "steps"
CONTROL = "control"
WINDOWS = "windows"


def clock_file(run_dir: Path, rank: Optional[int]) -> Path:
    """steps.jsonl, or steps.rank3.jsonl for rank 3 of a multi-process job."""
    return run_dir / (f"{STEPS}.jsonl" if rank is None else f"{STEPS}.rank{rank}.jsonl")


def window_dir(run_dir: Path, step: int) -> Path:
    """The folder of the window that starts recording at `step` (the same name on every rank)."""
    return run_dir / WINDOWS / f"step{step}"
