"""The run folder: its layout, creating a fresh one, and reading and writing run.json / samples.json.

The bottom layer: every other module that names a file of a run folder goes through here (docs/architecture.md).
"""

from ._files import (
    MAX_RUN_FILE_BYTES,
    RUN_FIELDS,
    read_json,
    read_run_info,
    read_samples,
    update_run_json,
    write_run_file,
    write_text,
)
from ._folders import check_run_name, launch_tag, make_dir, new_run_dir, shared_run_dir, usable_logdir
from ._layout import (
    RANK_RUN_GLOB,
    RANKS_HTML,
    RANKS_JSON,
    REPORTS,
    RUN,
    SAMPLES,
    TRACE_GLOB,
    document_files,
    is_trace_name,
    match_trace,
    rank_of,
    run_file,
    run_info_rank,
    sidecar_file,
    sidecar_path,
    trace_file,
    worker_name,
)

__all__ = [
    "MAX_RUN_FILE_BYTES",
    "RANKS_HTML",
    "RANKS_JSON",
    "RANK_RUN_GLOB",
    "REPORTS",
    "RUN",
    "RUN_FIELDS",
    "SAMPLES",
    "TRACE_GLOB",
    "check_run_name",
    "document_files",
    "is_trace_name",
    "launch_tag",
    "make_dir",
    "match_trace",
    "new_run_dir",
    "rank_of",
    "read_json",
    "read_run_info",
    "read_samples",
    "run_file",
    "run_info_rank",
    "shared_run_dir",
    "sidecar_file",
    "sidecar_path",
    "trace_file",
    "update_run_json",
    "usable_logdir",
    "worker_name",
    "write_run_file",
    "write_text",
]
