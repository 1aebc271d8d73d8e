"""Long runs: `idlehound run --watch`'s options, `idlehound capture RUN_FOLDER`, and the whole-run curve with
each later window compared with the first (docs/long-runs.md).

The first window: `--watch` keeps the usual one (--skip/--warmup/--active). It is the steady reference each later
window is compared with, and `idlehound analyze RUN` reads it as before.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from ..errors import IdlehoundError

if TYPE_CHECKING:
    from ..capture import WatchOptions
    from ._capture import RunOptions

WAIT_POLL_S = 0.2


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
    """run.json (or rank 0's) of a job that is running under --watch, and its world size; else IdlehoundError."""
    from ..runfolder import CONTROL, RANK_RUN_GLOB, RUN, run_file

    if not run_dir.is_dir():
        raise IdlehoundError(f"{run_dir}: no such run folder")
    files = [run_file(run_dir, None, RUN)] + sorted(run_dir.glob(RANK_RUN_GLOB))
    infos = []
    for f in files:
        try:
            infos.append(json.loads(f.read_text()))
        except (OSError, ValueError):
            continue
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
    """The run's step clock and windows, each later window compared with the first; None without a clock."""
    from ..capture import read_clock
    from ..runfolder import clock_file, read_run_info

    path = clock_file(run_dir, None)
    if not path.is_file():
        ranks = sorted(run_dir.glob("steps.rank*.jsonl"))
        if not ranks:
            return None
        path = ranks[0]
    try:
        header, rows = read_clock(path)
    except (OSError, ValueError) as e:
        raise IdlehoundError(f"{path}: not a step clock ({e})") from None
    info = read_run_info(run_dir) if (run_dir / "run.json").is_file() else {}
    windows, notes, comparisons = [], [], []
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
    for w in _later_windows(run_dir):
        windows.append(w)
        if w.get("status") == "recording" and not running:
            notes.append(
                f"the window at step {w['start_step']} was still recording when the job ended: its trace may be missing"
            )
        elif w.get("note"):
            notes.append(f"window at step {w['start_step']}: {w['note']}")
        doc = _window_doc(run_dir / w["folder"]) if w.get("status") == "saved" else None
        if doc is not None and base_doc is not None:
            comparisons.append(compare_window(base_doc, doc, int(w["start_step"])))
    return {
        "clock": str(header.get("clock", "host")),
        "rows": rows,
        "windows": windows,
        "comparisons": comparisons,
        "notes": notes,
    }


def _later_windows(run_dir: Path) -> list[dict[str, Any]]:
    from ..runfolder import WINDOWS

    out = []
    for f in sorted((run_dir / WINDOWS).glob("step*/window.json")):
        try:
            w = json.loads(f.read_text())
        except (OSError, ValueError):
            w = {"start_step": int(f.parent.name[4:] or 0), "steps": 0, "reason": "?", "status": "unreadable"}
        if isinstance(w, dict) and isinstance(w.get("start_step"), int):
            w["folder"] = f"{WINDOWS}/{f.parent.name}"
            out.append(w)
    return sorted(out, key=lambda w: w["start_step"])


def _window_doc(folder: Path) -> Optional[dict[str, Any]]:
    """The window's report (its child process wrote report.json), or its analysis now."""
    rep = folder / "report.json"
    if rep.is_file():
        try:
            doc = json.loads(rep.read_text())
            if isinstance(doc, dict) and "metrics" in doc:
                return doc
        except (OSError, ValueError):
            pass
    from ..pipeline import analyze_path

    return analyze_path(folder).doc


def compare_window(base: dict[str, Any], win: dict[str, Any], step: int) -> str:
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
    grew = _largest_growth(base, win)
    if grew is not None:
        cause, before, after = grew
        line = _line_of(win, cause)
        parts.append(
            f"grew most: {cause.replace('_', ' ')} {before:.3g} -> {after:.3g} ms per step"
            + (f", {line}" if line else "")
        )
    else:
        parts.append("no cause grew")
    return f"window at step {step:,} vs the first: " + "; ".join(parts)


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


def _largest_growth(base: dict[str, Any], win: dict[str, Any]) -> Optional[tuple[str, float, float]]:
    b, w = _causes(base), _causes(win)
    growth = {k: w[k] - b.get(k, 0.0) for k in w}
    if not growth:
        return None
    cause = max(growth, key=lambda k: growth[k])
    return (cause, b.get(cause, 0.0), w[cause]) if growth[cause] > 0 else None


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
