"""The annotated trace: the original torch.profiler trace with idlehound's findings as tracks of their own.

`idlehound report RUN -o annotated.pt.trace.json[.gz]` copies the trace's bytes through unchanged and appends,
inside its `traceEvents` array, events in the Trace Event Format that Perfetto's UI and chrome://tracing draw
with no plugin (docs/metrics.md, "Annotated trace"):

- a process `idlehound` (a string pid, which Perfetto and chrome://tracing read as a process of that name and
  idlehound's loader leaves out of every figure, so the annotated file analyses as the original does) holding
  - the track `GPU idle (cause at line)`: one complete event (`X`) per GPU idle gap, named by its main cause and source line;
  - a track per finding: a complete event over each run of consecutive steps the finding explains (steps whose
    replayed duration its fix alone shortens; every step for a finding without a replayed fix);
  - counters (`C`): the recorded step, and per finding with a replayed fix the step the replay predicts with that
    fix alone, one sample at each step's start;
- flows (`s`/`f`) from each blocking host call to the GPU op it waited for, bound to the original events.

The original file is streamed (read and written in pieces of a few MB), so a 1 GB trace is never held twice;
idlehound's events go in before the byte where the loader found traceEvents' closing ']' (Trace.events_close).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Optional, Union

import msgspec
import numpy as np

from ..analysis import Analysis, blocking_waits, idle_gaps, location_text
from ..diagnose import Finding, Kind, replay_fix
from ..errors import IdlehoundError
from .files import check_output

PID = "idlehound"
CAT = "idlehound"
GAPS_TRACK = "GPU idle (cause at line)"  # thread names; the events carry small int tids (bytes per event)
GAPS_TID = 1
STEPS_COUNTER = "recorded step"  # counters are named by event and key: "recorded step ms"
FLOW_NAME = "waited for"
EXPLAINED_NS = 1_000  # a step is explained when the fix shortens its replay by more than this (float noise)
# Flow ends sit this far inside their events (at most halfway), so each binds to its own slice.
FLOW_INSET_NS = 1_000

CHUNK = 4 << 20  # bytes read and written at a time
TAIL = 4 << 20  # bytes kept back at the end: the events array's close is found in them (Kineto writes
# a few short keys after it)
LAST_EVENT = 64 << 10  # bytes before that close that must hold an event (a "ph" key)


def is_annotated_name(path: Path) -> bool:
    """An output named like a trace (`.pt.trace.json`, `.pt.trace.json.gz`) asks for the annotated trace."""
    return path.name.lower().endswith((".pt.trace.json", ".pt.trace.json.gz"))


def check_annotated_output(out: Path, force: bool, inputs: tuple[Path, ...] = ()) -> None:
    """As check_output, but an existing file named like a trace is never replaced, even with --force: it may be
    a recorded run's trace (the input itself gets check_output's message)."""
    try:
        taken = (out.exists() or out.is_symlink()) and not out.is_dir()
        if taken and not any(p.exists() and out.samefile(p) for p in inputs):
            raise IdlehoundError(
                f"{out}: already exists; an annotated trace never replaces a trace file (remove it or choose "
                "another name)"
            )
    except OSError:
        pass  # check_output says what is wrong with the name
    check_output(out, force, inputs)


# ---- our events


def _ts(ns: int, base: int) -> str:
    """Nanoseconds on the table's clock as the file's microseconds, exactly (no float rounding)."""
    t = int(ns) + base
    sign, t = ("-", -t) if t < 0 else ("", t)
    return f"{sign}{t // 1000}.{t % 1000:03d}"


def _json(obj: dict[str, Any], more: str = "") -> bytes:
    """Compact JSON, UTF-8 as Kineto writes it; `more` ('"ts":...') is added as written (exact decimals). A
    string the trace gave that is not valid Unicode (a lone surrogate) is written as a \\u escape instead."""
    try:
        text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
        data = text.encode()
    except UnicodeEncodeError:
        text = json.dumps(obj, separators=(",", ":"), ensure_ascii=True)
        data = text.encode()
    return data[:-1] + f",{more}}}".encode() if more else data


def _x(name: str, tid: int, start: int, end: int, base: int, args: Optional[dict[str, Any]]) -> bytes:
    head: dict[str, Any] = {"ph": "X", "cat": CAT, "name": name, "pid": PID, "tid": tid}
    if args:
        head["args"] = args
    return _json(head, f'"ts":{_ts(start, base)},"dur":{_ts(end - start, 0)}')


def _timed(obj: dict[str, Any], ts: str) -> bytes:
    return _json(obj, f'"ts":{ts}')


def _meta(name: str, args: dict[str, Any], tid: Optional[int] = None) -> bytes:
    e: dict[str, Any] = {"ph": "M", "name": name, "pid": PID}
    if tid is not None:
        e["tid"] = tid
    e["args"] = args
    return _json(e)


def _base_ns(a: Analysis) -> int:
    """What the loader took off the file's times: the epoch base of an older trace with absolute times."""
    meta = a.trace.metadata
    base = meta.get("baseTimeNanoseconds")
    return int(base) if meta.get("epoch_timestamps") and isinstance(base, int) else 0


def _finding_track(i: int, f: Finding) -> str:
    return f"finding {i}: {f.title}"


def annotation_events(a: Analysis, findings: list[Finding]) -> Iterator[bytes]:
    """Every event idlehound adds, as compact JSON texts."""
    base = _base_ns(a)
    tracks = [GAPS_TRACK] + [_finding_track(i, f) for i, f in enumerate(findings, 1)]
    yield _meta("process_name", {"name": "idlehound"})
    yield _meta("process_sort_index", {"sort_index": -1})
    for k, t in enumerate(tracks):
        yield _meta("thread_name", {"name": t}, GAPS_TID + k)
        yield _meta("thread_sort_index", {"sort_index": k}, GAPS_TID + k)
    yield from _gap_events(a, base)
    per_step = _step_predictions(a, findings)
    for i, f in enumerate(findings, 1):
        yield from _finding_events(a, i, f, per_step.get(i), base)
    yield from _counter_events(a, findings, per_step, base)
    yield from _flow_events(a, base)


def _gap_events(a: Analysis, base: int) -> Iterator[bytes]:
    g = idle_gaps(a)
    if g is None:
        return
    for j in range(len(g.cause)):
        where = location_text(g.location[j], approx=False)
        us = {c: round(int(v[j]) / 1e3, 3) for c, v in g.ns.items() if v[j]}
        args = {"idle_us": us} if len(us) > 1 else None  # one cause: the name and the duration say it all
        yield _x(f"{g.cause[j]} at {where}", GAPS_TID, int(g.start_ns[j]), int(g.end_ns[j]), base, args)


def _step_predictions(a: Analysis, findings: list[Finding]) -> dict[int, list[float]]:
    """Finding rank -> each step's replayed duration (ns) with its fix alone, at the fitted host rate (as the
    replay's predictions are made: diagnose/_predict.py); only findings the replay predicted."""
    rp = a.replay
    if rp is None:
        return {}
    rate = float(a.observer.get("host_rate", 1.0))
    out = {}
    for i, f in enumerate(findings, 1):
        if f.kind == Kind.RISK or "replay" not in f.details:
            continue
        steps = rp.play(replay_fix(a, [f.cause]), rate).steps_ns
        if len(steps) == len(a.steps):
            out[i] = [float(x) for x in steps]
    return out


def _runs(flags: list[bool]) -> Iterator[tuple[int, int]]:
    """(first, last) index of each run of consecutive true flags."""
    start = None
    for k, on in enumerate([*flags, False]):
        if on and start is None:
            start = k
        elif not on and start is not None:
            yield start, k - 1
            start = None


def _finding_events(
    a: Analysis, i: int, f: Finding, predicted: Optional[list[float]], base: int
) -> Iterator[bytes]:
    steps = a.steps
    if not steps:
        return
    if predicted is not None:
        replayed = a.replay.play(rate=float(a.observer.get("host_rate", 1.0))).steps_ns if a.replay else []
        gain = [r - p for r, p in zip(replayed, predicted)]
        explained = [x > EXPLAINED_NS for x in gain]
        if not any(explained):  # the gain is the loader's pace over the window, not any one step's
            explained = [True] * len(steps)
    else:
        gain, explained = [], [True] * len(steps)
    where = location_text(f.location, approx=False)
    for lo, hi in _runs(explained):
        args: dict[str, Any] = {
            "cause": str(f.cause),
            "severity": str(f.severity),
            "kind": str(f.kind),
            "line": where,
            "recoverable_ms_per_step": round(f.recoverable_ms, 4),
            "steps": [s.number for s in steps[lo : hi + 1]],
            "fix": f.fix,
        }
        if gain:
            args["replayed_gain_ms"] = [round(x / 1e6, 4) for x in gain[lo : hi + 1]]
        name = f"#{i} {f.title}" + (f" at {where}" if f.location else "")
        yield _x(name, GAPS_TID + i, steps[lo].start_ns, steps[hi].end_ns, base, args)


def _counter_events(
    a: Analysis, findings: list[Finding], per_step: dict[int, list[float]], base: int
) -> Iterator[bytes]:
    for k, s in enumerate(a.steps):
        ts = _ts(s.start_ns, base)
        yield _timed(
            {"ph": "C", "name": STEPS_COUNTER, "pid": PID, "args": {"ms": round(s.duration_ns / 1e6, 4)}}, ts
        )
        for i, steps in per_step.items():
            name = f"predicted step, fix #{i} {findings[i - 1].cause}"
            yield _timed({"ph": "C", "name": name, "pid": PID, "args": {"ms": round(steps[k] / 1e6, 4)}}, ts)


def _original_id(ev: Any, code: int) -> Any:
    """A pid or tid as the file wrote it: the table keeps strings as -(i + 2) into str_ids."""
    return int(code) if code >= 0 else ev.str_ids[-int(code) - 2]


def _flow_events(a: Analysis, base: int) -> Iterator[bytes]:
    ev = a.trace.events
    calls, ops = blocking_waits(a)
    if calls.size == 0:
        return
    used = [int(np.max(x)) for x in (ev.corr, ev.ext) if x.size]
    first_id = max([0, *used]) + 1  # above every correlation id: no clash with the profiler's own flows
    for n, (c, o) in enumerate(zip(calls.tolist(), ops.tolist())):
        if -1 in (ev.pid[c], ev.tid[c], ev.pid[o], ev.tid[o]):
            continue  # no pid or tid to bind to
        c0, cd = int(ev.ts[c]), int(ev.dur[c])
        o0, od = int(ev.ts[o]), int(ev.dur[o])
        # Inside the call, early; inside the op, late; the start never after the end (the op ends after the
        # call began: blocking_waits keeps only such pairs).
        t_s = c0 + min(FLOW_INSET_NS, cd // 2, max(o0 + od - c0, 0) // 2)
        t_f = max(t_s, o0 + od - min(FLOW_INSET_NS, od // 2))
        common = {"cat": CAT, "name": FLOW_NAME, "id": first_id + n}
        yield _timed(
            {"ph": "s", **common, "pid": _original_id(ev, ev.pid[c]), "tid": _original_id(ev, ev.tid[c])},
            _ts(t_s, base),
        )
        yield _timed(
            {
                "ph": "f",
                "bp": "e",
                **common,
                "pid": _original_id(ev, ev.pid[o]),
                "tid": _original_id(ev, ev.tid[o]),
            },
            _ts(t_f, base),
        )


# ---- streaming the original through

_Stream = Union[IO[bytes], gzip.GzipFile]


def _open_in(path: Path) -> _Stream:
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gz else open(path, "rb")


@contextlib.contextmanager
def _open_out(path: Path, gz: bool) -> Iterator[_Stream]:
    with open(path, "wb") as raw:
        if not gz:
            yield raw
            return
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0) as g:
            yield g


def _events_close(tail: bytearray) -> int:
    """Where the traceEvents array closes in the trace's last bytes: its last ']' when what follows is the end of
    the top-level object (more keys, no array) and an event precedes it (Kineto's layout). -1 when not found."""
    pos = tail.rfind(b"]")
    while pos >= 0:
        after = tail[pos + 1 :]
        if b"[" not in after and b'"traceEvents"' not in after:
            try:
                ok = isinstance(msgspec.json.decode(b'{"traceEvents":0' + after), dict)
            except (msgspec.DecodeError, RecursionError):
                ok = False
            if ok:
                before = tail[max(0, pos - LAST_EVENT) : pos].rstrip()
                return pos if before.endswith(b"[") or (before.endswith(b"}") and b'"ph"' in before) else -1
        pos = tail.rfind(b"]", 0, pos)
    return -1


def _copy_with_ours(src: _Stream, dst: _Stream, ours: list[bytes], name: Path, close: int = -1) -> None:
    """Copy src to dst with ours inserted before the ']' that closes traceEvents: at byte `close` where the loader
    recorded it, else found in the last bytes (_events_close)."""
    tail = bytearray()
    done = 0  # bytes of src written
    while True:
        chunk = src.read(CHUNK)
        if not chunk:
            break
        tail += chunk
        keep = TAIL if close < 0 else max(len(tail) - (close - done), 0) + LAST_EVENT
        if len(tail) > keep + TAIL:  # write all but what may still hold the close and the bytes before it
            cut = len(tail) - keep
            dst.write(tail[:cut])
            del tail[:cut]
            done += cut
    at = _events_close(tail) if close < 0 else close - done
    if not 0 <= at < len(tail) or tail[at : at + 1] != b"]":
        why = (
            "changed since it was analysed"
            if close >= 0
            else "has no traceEvents array this can find the end of"
        )
        raise IdlehoundError(
            f"{name}: cannot find the end of its traceEvents array to add the annotations ({why})"
        )
    empty = bytes(tail[max(0, at - LAST_EVENT) : at]).rstrip().endswith(b"[")
    dst.write(tail[:at])
    if ours:
        dst.write(b"\n" if empty else b",\n")
        dst.write(b",\n".join(ours))
    dst.write(tail[at:])


def write_annotated(
    a: Analysis, findings: list[Finding], out: Path, force: bool = False, inputs: tuple[Path, ...] = ()
) -> tuple[Path, int]:
    """Write the original trace with idlehound's tracks to `out` (gzipped when it ends in .gz); returns the path
    and the bytes of JSON added. The file appears whole or not at all (written aside, then renamed)."""
    src = a.trace.path
    if not src.is_file():
        raise IdlehoundError(
            f"{out}: an annotated trace needs the trace file (this trace was parsed from memory)"
        )
    check_annotated_output(out, force, (*inputs, src))
    ours = list(annotation_events(a, findings))
    part = out.with_name(out.name + ".part")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with _open_in(src) as f, _open_out(part, out.name.lower().endswith(".gz")) as g:
            _copy_with_ours(f, g, ours, src, a.trace.events_close)
        os.replace(part, out)
    except OSError as e:
        part.unlink(missing_ok=True)
        raise IdlehoundError(f"{out}: cannot write the annotated trace ({e.strerror or e})") from None
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return out, sum(map(len, ours)) + 2 * len(ours)
