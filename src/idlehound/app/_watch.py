"""Long runs: `idlehound run --watch`'s options, `idlehound capture RUN_FOLDER`, and the whole-run curve with
each later window compared with the first (docs/long-runs.md).

The first window: `--watch` keeps the usual one (--skip/--warmup/--active). It is the steady reference each later
window is compared with, and `idlehound analyze RUN` reads it as before.
"""

from __future__ import annotations

import math
import os
import re
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from ..errors import IdlehoundError, TraceError

if TYPE_CHECKING:
    from ..capture import WatchOptions
    from ._capture import RunOptions

WAIT_POLL_S = 0.2
GREW_SHARE = 0.05  # a cause "grew" when it rose by at least this share of the first window's step time
MAX_RANK_REPORTS = 32  # rank reports read for a window's per-rank line (each a few MB)


# ---- idlehound run --watch
def watch_options(o: RunOptions) -> Optional[WatchOptions]:
    """The WatchOptions `idlehound run` was asked for; None without --watch. IdlehoundError on a bad value."""
    from ..capture import WatchOptions, parse_when

    asked = o.capture_when is not None or o.capture_every is not None
    if asked and not o.watch:
        raise IdlehoundError("run: --capture-when and --capture-every need --watch")
    if not o.watch:
        return None
    if o.stop_after:
        raise IdlehoundError("run: --watch keeps the job running after its first window; drop --stop-after")
    try:
        slower = parse_when(o.capture_when) if o.capture_when is not None else None
    except ValueError as e:
        raise IdlehoundError(f"run: {e}") from None
    if o.capture_every is not None and o.capture_every < 1:
        raise IdlehoundError("run: --capture-every must be >= 1 step")
    if o.max_windows < 0 or not o.max_windows_mb >= 0:
        raise IdlehoundError("run: --max-windows and --max-windows-mb must be >= 0")
    return WatchOptions(
        slower=slower,
        every=o.capture_every,
        steps=o.active,
        max_windows=o.max_windows,
        max_disk_mb=o.max_windows_mb,
    )


def watch_flags(o: RunOptions) -> dict[str, Any]:
    """The --watch options each torchrun worker's own `idlehound run` gets again."""
    if not o.watch:
        return {}
    out: dict[str, Any] = {"--max-windows": o.max_windows, "--max-windows-mb": o.max_windows_mb}
    if o.capture_when is not None:
        out["--capture-when"] = o.capture_when
    if o.capture_every is not None:
        out["--capture-every"] = o.capture_every
    return out


# ---- idlehound capture RUN_FOLDER
def capture(run_dir: Path, steps: int, wait_s: float) -> str:
    """Ask the job writing run_dir for a window of `steps` steps; the line to print. IdlehoundError otherwise."""
    from ..capture import (
        LEAD_S,
        RequestExists,
        read_acks,
        read_request,
        retire_request,
        write_request,
    )

    if steps < 1 or steps > 1000:
        raise IdlehoundError(f"capture: --steps must be 1-1000, not {steps}")
    info, world = _running_job(run_dir)
    req = read_request(run_dir)
    if req is not None:
        acks = read_acks(run_dir, req["id"])
        if len([a for a in acks if a.get("state") in ("saved", "empty", "refused")]) < world:
            raise IdlehoundError(
                f"{run_dir}: a window was asked for already (step {req['at_step']}, by {req.get('by')}) and is "
                "not saved yet; ask again once it is"
            )
        retire_request(run_dir, req["id"])
    last, ms = _progress(run_dir, world)
    lead = max(2, math.ceil(LEAD_S * 1e3 / ms)) if ms else 10
    try:
        req = write_request(run_dir, last + 1 + lead, steps, by="idlehound capture")
    except RequestExists:
        raise IdlehoundError(
            f"{run_dir}: another `idlehound capture` asked at the same moment; one window is on its way"
        ) from None
    except OSError as e:
        raise IdlehoundError(f"{run_dir}: cannot write the request ({e.strerror or e})") from None
    return _wait(run_dir, req, world, wait_s)


def _running_job(run_dir: Path) -> tuple[dict[str, Any], int]:
    """run.json (or rank 0's) of a job that is running under --watch, and its world size; else IdlehoundError
    (a run.json that is not readable JSON, or too large: TraceError naming it)."""
    from ..runfolder import CONTROL, RANK_RUN_GLOB, RUN, read_json, run_file

    if not run_dir.is_dir():
        raise IdlehoundError(f"{run_dir}: no such run folder")
    files = [run_file(run_dir, None, RUN)] + sorted(run_dir.glob(RANK_RUN_GLOB))
    infos = [read_json(f) for f in files if f.is_file()]  # written whole (write_text): never half a file
    infos = [i for i in infos if isinstance(i, dict) and i.get("idlehound_run")]
    if not infos:
        raise IdlehoundError(f"{run_dir}: not an idlehound run folder (no run.json)")
    running = [i for i in infos if i.get("status") == "running"]
    if not running:
        raise IdlehoundError(f"{run_dir}: the job has finished; a window can only be asked of a running job")
    info = running[0]
    watch = info.get("watch")
    if not isinstance(watch, dict) or not (run_dir / CONTROL).is_dir():
        raise IdlehoundError(
            f"{run_dir}: the job was not started with --watch; windows on demand need `idlehound run --watch`"
        )
    if watch.get("host") == os.uname().nodename and not _alive(watch.get("pid")):
        raise IdlehoundError(
            f"{run_dir}: the job (pid {watch.get('pid')}) is no longer running; it ended without closing its "
            "run folder"
        )
    return info, int(info.get("world_size") or 1)


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _progress(run_dir: Path, world: int) -> tuple[int, Optional[float]]:
    """The newest step any rank has timed, and the median step time of the recent rows (ms)."""
    from ..capture import read_clock
    from ..runfolder import clock_file

    last, recent = 0, []
    for rank in [None] if world <= 1 else range(world):
        try:
            _, rows = read_clock(clock_file(run_dir, rank))
        except (OSError, ValueError):
            continue
        if rows:
            last = max(last, int(rows[-1][0]) + int(rows[-1][1]) - 1)
            recent += [r[2] for r in rows[-50:]]
    return last, statistics.median(recent) if recent else None


def _wait(run_dir: Path, req: dict[str, Any], world: int, wait_s: float) -> str:
    from ..capture import read_acks

    asked = f"asked for a window of {req['steps']} step(s) from step {req['at_step']}"
    if wait_s <= 0:
        return f"{asked}; it will be in {run_dir}/windows/"
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        acks = read_acks(run_dir, req["id"])
        final = [a for a in acks if a.get("state") in ("saved", "empty", "refused", "not reached")]
        if len(final) >= world:
            bad = [a for a in final if a.get("state") != "saved"]
            if bad:
                raise IdlehoundError(
                    f"{run_dir}: the window was not recorded: {bad[0].get('note', bad[0]['state'])}"
                )
            return f"{asked}: saved in {final[0].get('window')}"
        try:
            _running_job(run_dir)
        except IdlehoundError as e:
            raise IdlehoundError(f"{run_dir}: the job ended before the window was saved ({e})") from None
        time.sleep(WAIT_POLL_S)
    raise IdlehoundError(
        f"{run_dir}: {asked}, not saved within {wait_s:g} s (the job may be stalled); it stays asked for"
    )


# ---- idlehound report RUN: the curve and the comparisons
def step_curve(run_dir: Path, base_doc: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """The run's step clock and windows, each later window compared with the first; None without a clock.

    In a multi-rank run folder it is the analysed rank's (the rank of base_doc's worker): its clock, its first
    window, and each later window's trace of that same rank; a line per window gives every rank's step time."""
    from ..capture import read_clock
    from ..runfolder import RUN, rank_of, read_run_info, run_file

    worker = str(((base_doc or {}).get("trace") or {}).get("worker") or "")
    rank = rank_of(worker) if worker else None
    path = _clock_path(run_dir, rank)
    if path is None:
        return None
    try:
        header, rows = read_clock(path)
    except (OSError, ValueError) as e:
        raise IdlehoundError(f"{path}: not a step clock ({e})") from None
    own = rank if rank is not None and run_file(run_dir, rank, RUN).is_file() else None
    info = read_run_info(run_dir, own)  # {} without one; a bad one: TraceError naming it
    windows, notes, comparisons = _windows(run_dir, rank, info, base_doc)
    return {
        "clock": str(header.get("clock", "host")),
        "rows": rows,
        "windows": windows,
        "comparisons": comparisons,
        "notes": notes,
    }


def _clock_path(run_dir: Path, rank: Optional[int]) -> Optional[Path]:
    """The rank's step clock, else the first rank's; None when the run has none."""
    from ..runfolder import clock_file

    path = clock_file(run_dir, rank)
    if path.is_file():
        return path
    ranks = sorted(run_dir.glob("steps*.jsonl"))
    return ranks[0] if ranks else None


def _windows(
    run_dir: Path, rank: Optional[int], info: dict[str, Any], base_doc: Optional[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[str], list[Any]]:
    """(the run's windows, the notes on them, each later window compared with the first)."""
    windows: list[dict[str, Any]] = []
    notes: list[str] = []
    comparisons: list[Any] = []
    sched = info.get("schedule") or {}
    if info.get("traces") and sched:
        start = int(sched.get("skip", 0)) + int(sched.get("warmup", 0))
        windows.append(
            {
                "start_step": start,
                "steps": int(sched.get("active", 0)),
                "reason": "first window",
                "status": "saved",
            }
        )
    raw = info.get("watch")
    watch: dict[str, Any] = raw if isinstance(raw, dict) else {}
    same_host = watch.get("host") == os.uname().nodename
    running = info.get("status") == "running" and (not same_host or _alive(watch.get("pid")))
    for w, others in _later_windows(run_dir, rank):
        windows.append(w)
        if w.get("status") == "recording" and not running:
            notes.append(
                f"the window at step {w['start_step']} was still recording when the job ended: its trace may be missing"
            )
        elif w.get("note"):
            notes.append(f"window at step {w['start_step']}: {w['note']}")
        notes += _disagreeing(w, others)
        folder = run_dir / w["folder"]
        doc = _window_doc(folder, rank) if w.get("status") == "saved" else None
        if doc is not None and base_doc is not None:
            comparisons.append(compare_window(base_doc, doc, int(w["start_step"]), rank))
        if others:
            line = _ranks_line(folder, int(w["start_step"]))
            if line:
                comparisons.append(line)
    return windows, notes, comparisons


# window.json's fields the report reads: name -> allowed types (start_step and steps also >= 0)
WINDOW_FIELDS: dict[str, tuple[type, ...]] = {
    "start_step": (int,),
    "steps": (int,),
    "reason": (str,),
    "status": (str,),
    "note": (str, type(None)),
}


def _later_windows(run_dir: Path, rank: Optional[int]) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each later window as `rank` saw it (window.json alone; under torchrun window.rankN.json, or the lowest
    rank's when that rank has none), with every rank's own, in step order."""
    from ..runfolder import WINDOWS

    out = []
    for folder in sorted((run_dir / WINDOWS).glob("step*")):
        files = sorted(folder.glob("window*.json"))
        if not files:
            continue
        per_rank = [_read_window(f) for f in files]
        mine = next((w for w in per_rank if w.get("rank") == rank), per_rank[0])
        w = {**mine, "folder": f"{WINDOWS}/{folder.name}"}
        out.append((w, [x for x in per_rank if x is not mine] if len(per_rank) > 1 else []))
    return sorted(out, key=lambda x: int(x[0]["start_step"]))


def _read_window(path: Path) -> dict[str, Any]:
    """A window.json, checked: TraceError naming the file and the field when it is not what capture writes."""
    from ..runfolder import read_json

    w = read_json(path)
    if not isinstance(w, dict):
        raise TraceError(path, "not an idlehound window.json (the top level is not an object)")
    for key, types in WINDOW_FIELDS.items():
        value = w.get(key)
        if (key in w or key in ("start_step", "steps", "status")) and (
            not isinstance(value, types) or isinstance(value, bool)
        ):
            raise TraceError(
                path, f"'{key}' must be {' or '.join(t.__name__ for t in types)}, not {value!r:.40}"
            )
    if w["start_step"] < 0 or not 0 <= w["steps"] <= 10**6:
        raise TraceError(path, "'start_step' and 'steps' must be >= 0")
    w.setdefault("reason", "?")
    return w


def _disagreeing(w: dict[str, Any], others: list[dict[str, Any]]) -> list[str]:
    """A note for each rank whose window ended otherwise than the reported rank's (saved on one, refused on
    another: a disk check or cap seen differently)."""
    return [
        f"window at step {w['start_step']}: rank {o.get('rank')} {o['status']}"
        + (f" ({o['note']})" if o.get("note") else "")
        for o in others
        if o["status"] != w["status"]
    ]


def _window_doc(folder: Path, rank: Optional[int]) -> Optional[dict[str, Any]]:
    """The window's report of `rank` (report.json, or report.rankN.json: the job's child process wrote it as the
    window ended), or its analysis now; None when the folder holds no trace of that rank."""
    from ..pipeline import analyze_path
    from ..runfolder import rank_of, run_file

    doc = _report_file(run_file(folder, rank, "report"))
    if doc is not None:
        return doc
    worker = None
    if rank is not None:
        workers = sorted({p.name.split(".")[0] for p in folder.glob("*.pt.trace.json*")})
        worker = next((wk for wk in workers if rank_of(wk) == rank), None)
        if worker is None:
            return None
    return analyze_path(folder, worker=worker).doc


def _report_file(path: Path) -> Optional[dict[str, Any]]:
    """A window's report.json; None when there is none; TraceError when it is not readable or not a report."""
    from ..runfolder import read_json

    if not path.is_file():
        return None
    try:
        doc = read_json(path)
    except TraceError as e:
        raise TraceError(
            path, f"{e.problem}; delete it and `idlehound report` analyses the window again"
        ) from None
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("metrics"), dict)
        or not isinstance(doc.get("trace"), dict)
    ):
        raise TraceError(path, "not an idlehound report (no 'metrics' and 'trace' objects)")
    return doc


def _ranks_line(folder: Path, step: int) -> Optional[str]:
    """Every rank's step time in the window (the step_ms of each rank's report.rankN.json, which the job's
    children wrote as the window ended; nothing is analysed here): which rank was slow in it."""
    now: dict[int, float] = {}
    named = [(re.fullmatch(r"report\.rank(\d+)\.json", p.name), p) for p in folder.glob("report.rank*.json")]
    files = sorted((int(m.group(1)), p) for m, p in named if m)
    for r, p in files[:MAX_RANK_REPORTS]:
        doc = _report_file(p)
        ms = _metric(doc, "step_ms") if doc else None
        if ms is not None:
            now[r] = ms
    if not now:
        return None
    parts = [f"rank {r} {ms:.3g} ms" for r, ms in sorted(now.items())]
    more = f" (the first {MAX_RANK_REPORTS} ranks' reports read)" if len(files) > MAX_RANK_REPORTS else ""
    return f"window at step {step:,}, step time by rank: " + ", ".join(parts) + more


def compare_window(base: dict[str, Any], win: dict[str, Any], step: int, rank: Optional[int] = None) -> str:
    """One sentence: how the window differs from the first, the cause that grew most, by how much, at which line."""
    b_ms, w_ms = _metric(base, "step_ms"), _metric(win, "step_ms")
    parts = []
    if b_ms and w_ms:
        parts.append(f"step time {b_ms:.3g} -> {w_ms:.3g} ms ({w_ms / b_ms:.2f}x)")
    b_u, w_u = _metric(base, "gpu_util"), _metric(win, "gpu_util")
    if (
        base["trace"].get("gpu_recorded")
        and win["trace"].get("gpu_recorded")
        and b_u is not None
        and w_u is not None
    ):
        parts.append(f"GPU idle {100 - b_u:.0f}% -> {100 - w_u:.0f}%")
    grew = _largest_growth(base, win, GREW_SHARE * (b_ms or 0.0))
    if grew is not None:
        cause, before, after = grew
        line = _line_of(win, cause)
        parts.append(
            f"grew most: {cause.replace('_', ' ')} {before:.3g} -> {after:.3g} ms per step"
            + (f", {line}" if line else "")
        )
    else:
        parts.append(f"no cause grew by {GREW_SHARE:.0%} of the step or more")
    who = "" if rank is None else f" (rank {rank})"
    return f"window at step {step:,} vs the first{who}: " + "; ".join(parts)


def _metric(doc: dict[str, Any], key: str) -> Optional[float]:
    m = doc.get("metrics", {}).get(key) or {}
    v = m.get("value")
    return float(v) if isinstance(v, (int, float)) else None


def _causes(doc: dict[str, Any]) -> dict[str, float]:
    """ms per step by cause: GPU idle by cause on a GPU trace; the host breakdown (data loading named) without."""
    if doc["trace"].get("gpu_recorded"):
        return {k: v for k, v in doc.get("idle_by_cause_ms", {}).items() if isinstance(v, (int, float))}
    out = {
        ("data_loading" if k == "DataLoader" else k): v
        for k, v in doc.get("breakdown_ms", {}).items()
        if isinstance(v, (int, float))
    }
    loader = (doc.get("dataloader") or {}).get("host_ms_per_step")
    if isinstance(loader, (int, float)):
        out["data_loading"] = max(out.get("data_loading", 0.0), loader)
    return out


def _largest_growth(
    base: dict[str, Any], win: dict[str, Any], floor_ms: float
) -> Optional[tuple[str, float, float]]:
    """The cause whose ms per step rose most, when it rose by more than floor_ms (and at all); else None."""
    b, w = _causes(base), _causes(win)
    growth = {k: w[k] - b.get(k, 0.0) for k in w}
    if not growth:
        return None
    cause = max(growth, key=lambda k: growth[k])
    return (cause, b.get(cause, 0.0), w[cause]) if growth[cause] > max(floor_ms, 0.0) else None


def _line_of(doc: dict[str, Any], cause: str) -> Optional[str]:
    loc = None
    if cause == "data_loading":
        loc = (doc.get("dataloader") or {}).get("location")
    if loc is None:
        for il in doc.get("idle_by_line", []):
            if il.get("cause") == cause and il.get("location"):
                loc = il["location"]
                break
    return f"{loc['file']}:{loc['line']}" if isinstance(loc, dict) and "file" in loc else None


def report_run_name(path: Path, run: Optional[str]) -> Optional[str]:
    """A run folder with later windows: report its first window (the later ones are compared with it)."""
    from ..runfolder import WINDOWS

    if run is None and path.is_dir() and (path / WINDOWS).is_dir() and any(path.glob("*.pt.trace.json*")):
        return path.name
    return run


def show_curve(curve: Optional[dict[str, Any]]) -> None:
    """The sparkline, the comparisons and the notes, on the terminal."""
    import click

    from ..report import sparkline, visible

    if curve is None:
        return
    for line in sparkline(curve) + curve["comparisons"] + [f"note: {n}" for n in curve["notes"]]:
        click.echo(visible(line))
