"""Reading and writing run.json and samples.json, the files `idlehound run` writes beside a trace.

They come from the same untrusted folder as the trace. Each field the analysis uses is checked for its
type and range; a file that is not what capture writes stops the analysis with a one-line TraceError
naming the file and the field (exit 2), rather than failing later inside the analysis.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Optional

import msgspec

from .. import _limits
from ..errors import TraceError
from ._layout import RUN, SAMPLES, run_file

MAX_RUN_FILE_BYTES = 64 * 2**20  # run.json and samples.json are a few KB; the sidecar a few MB
MAX_SIDECAR_BYTES = 512 * 2**20
_NUM = (int, float)
_INT64 = 2**63

# Fields of run.json the analysis and the renderers read: dotted path -> (allowed types, lowest, highest)
RUN_FIELDS: dict[str, tuple[tuple[type, ...], Optional[float], Optional[float]]] = {
    "sampler": ((dict,), None, None),
    "sampler.sawtooth": ((bool,), None, None),
    "sampler.idle_sample_share": (_NUM, 0.0, 1.0),
    "sampler.mean_util": (_NUM, 0.0, 100.0),
    "sampler.window_mean_util": (_NUM, 0.0, 100.0),
    "sampler.source": ((str,), None, None),
    "profiler_overhead": (_NUM, 0.0, 1e6),
    "unprofiled_step_ms": (_NUM, 0.0, 8.64e7),
    "profiled_step_ms": (_NUM, 0.0, 8.64e7),
    "cudnn_benchmark": ((bool,), None, None),
    "steps_seen": ((int,), 0, _INT64 - 1),
    "dataloader": ((dict,), None, None),
    "dataloader.num_workers": ((int,), 0, 1e6),
    "dataloader.pin_memory": ((bool,), None, None),
    "dataloader.batch_size": ((int,), 1, 1e12),
    "environment": ((dict,), None, None),
    "environment.cpu_count": ((int,), 1, 1e6),
    "workload": ((dict,), None, None),
    "workload.config": ((dict,), None, None),
    "workload.config.batch_size": ((int,), 1, 1e12),
}


def read_json(path: Path, limit: int = MAX_RUN_FILE_BYTES) -> Any:
    """A JSON file (gzipped or not), read within `limit` bytes; strict JSON (no NaN/Infinity)."""
    try:
        with open(path, "rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
            f.seek(0)
            data = _limits.read_limited(f, path, limit, gz)
    except (OSError, EOFError, MemoryError, *_limits.GZIP_ERRORS) as e:
        raise TraceError(path, f"cannot read ({e})") from None
    try:
        _limits.scan(data, path)
        return msgspec.json.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError) as e:
        raise TraceError(path, f"not valid JSON ({str(e)[:120]})") from None


def read_run_info(folder: Path, rank: Optional[int] = None) -> dict[str, Any]:
    """run.json (with samples.json as `utilization_curve`) of a capture folder; {} when there is none."""
    p = run_file(folder, rank, RUN)
    if not p.is_file():
        return {}
    data = read_json(p)
    if not isinstance(data, dict):
        raise TraceError(p, f"not an idlehound run.json (the top level is a {_kind(data)}, not an object)")
    for key, (types, lo, hi) in RUN_FIELDS.items():
        _check_field(p, data, key, types, lo, hi)
    _check_finite(p, data, "")
    samples = run_file(folder, rank, SAMPLES)
    if samples.is_file():
        data["utilization_curve"] = read_samples(samples)
    return data


def read_samples(path: Path, max_rows: int = 20000) -> dict[str, Any]:
    """samples.json: {"source": str, "samples": [[t_s, util_pct, mem_mib], ...]}, the first max_rows rows."""
    s = read_json(path)
    if not isinstance(s, dict):
        raise TraceError(
            path, f"not an idlehound samples.json (the top level is a {_kind(s)}, not an object)"
        )
    source = s.get("source")
    if source is not None and not isinstance(source, str):
        raise TraceError(path, f"'source' must be a string, not {_kind(source)}")
    rows = s.get("samples", [])
    if not isinstance(rows, list):
        raise TraceError(path, f"'samples' must be a list, not {_kind(rows)}")
    rows = rows[:max_rows]
    cpu_cap = CPU_TICK_SLACK if source == "cpu" else 100  # see CPU_TICK_SLACK
    for i, row in enumerate(rows):
        if not (isinstance(row, list) and len(row) == 3 and all(_number(v) for v in row)):
            raise TraceError(
                path, f"samples[{i}] must be [seconds, utilisation %, memory MiB] numbers, not {_short(row)}"
            )
        t, util, mem = row
        if not (0 <= t < 1e9 and 0 <= util <= cpu_cap and 0 <= mem < 1e12):
            raise TraceError(
                path,
                f"samples[{i}] = {_short(row)} is out of range "
                "(seconds >= 0, utilisation 0-100 %, memory >= 0)",
            )
    if cpu_cap > 100:
        rows = [[t, min(util, 100), mem] for t, util, mem in rows]
    return {"source": source, "samples": rows}


def write_text(path: Path, text: str) -> None:
    """Write whole or not at all: a reader never sees half a run.json."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_run_file(run_dir: Path, rank: Optional[int], stem: str, data: Any) -> Path:
    """run.json / samples.json (run.rankN.json for a rank), written whole."""
    path = run_file(run_dir, rank, stem)
    write_text(path, json.dumps(data, indent=2 if stem == RUN else None, default=str))
    return path


def update_run_json(run_dir: Path, **fields: Any) -> None:
    """Add what only the traces know to the launcher's run.json, when there is one."""
    path = run_file(run_dir, None)
    if path.exists():
        info = json.loads(path.read_text())
        info.update(fields)
        path.write_text(json.dumps(info, indent=2))


# Earlier versions' CPU sampler could read a short interval above 100% of the machine (CPU time counts in clock
# ticks); such run folders still load, their readings capped at the machine's 100%.
CPU_TICK_SLACK = 400


def _check_field(
    path: Path,
    data: dict[str, Any],
    key: str,
    types: tuple[type, ...],
    lo: Optional[float],
    hi: Optional[float],
) -> None:
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, dict) or node.get(part) is None:
            return  # absent or null: the analysis treats it as unknown
        node = node[part]
    ok = isinstance(node, types) and not (isinstance(node, bool) and bool not in types)
    if not ok:
        raise TraceError(path, f"'{key}' must be {_names(types)}, not {_kind(node)} {_short(node)}")
    if lo is not None and not (lo <= node <= hi):
        raise TraceError(path, f"'{key}' = {_short(node)} is out of range ({lo:g} to {hi:g})")


def _check_finite(path: Path, x: Any, where: str) -> None:
    """Every number in the file must fit the report's JSON: finite, and integers within 64 bits."""
    if isinstance(x, float) and not math.isfinite(x) or isinstance(x, int) and not -_INT64 <= x < _INT64:
        raise TraceError(path, f"'{where.lstrip('.')}' = {_short(x)} is not a usable number")
    if isinstance(x, dict):
        for k, v in x.items():
            _check_finite(path, v, f"{where}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            _check_finite(path, v, f"{where}[{i}]")


def _number(v: Any) -> bool:
    return isinstance(v, _NUM) and not isinstance(v, bool) and math.isfinite(v)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _names(types: tuple[type, ...]) -> str:
    return {
        "int": "an integer",
        "float": "a number",
        "bool": "true or false",
        "str": "a string",
        "dict": "an object",
    }.get(types[-1].__name__ if types != _NUM else "float", "valid")


def _kind(v: Any) -> str:
    return {
        dict: "object",
        list: "list",
        str: "string",
        bool: "boolean",
        type(None): "null",
        int: "integer",
        float: "number",
    }.get(type(v), type(v).__name__)


def _short(v: Any) -> str:
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10**18:
        return f"<integer of {len(str(abs(v))) if abs(v) < 10**4000 else 'thousands of'} digits>"
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
