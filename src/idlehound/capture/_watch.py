"""Long runs: the always-on step clock, and under --watch the later windows (asked for, or on a slowdown).

The session calls on_step() at every step end and close() when the run ends. A later window is recorded by the
session's own profiler (Session.reopen) into windows/step<N>/, and analysed by a child process as soon as it is
saved, so the training thread pays only for the trace's export, as it does for the first window.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from ..runfolder import WINDOWS, clock_file, is_trace_name, run_file, window_dir, write_text
from ._clock import StepClock
from ._control import LEAD_S, Poller, RequestExists, read_acks, retire_request, write_ack, write_request
from ._trigger import Trigger, TriggerRule

if TYPE_CHECKING:
    from ._session import Session


@dataclass(frozen=True)
class WatchOptions:
    """`idlehound run --watch` and its triggers."""

    slower: Optional[float] = None  # --capture-when slower=R
    every: Optional[int] = None  # --capture-every N
    k: int = 20  # steps in the slowdown's rolling median
    baseline: int = 50
    cooldown: int = 200  # steps after a window before a trigger fires again
    steps: int = 5  # steps each later window records
    warmup: int = 1
    max_windows: int = 10
    max_disk_mb: float = 2048.0  # all of windows/ together
    analyse: bool = True


WINDOW = "window"  # window.json, or window.rankN.json per rank of a multi-process job
FINAL = ("saved", "empty", "refused", "not reached")  # a rank's last word on a request


@dataclass
class Planned:
    at_step: int  # the first recorded step
    steps: int
    reason: str
    request_id: Optional[str] = None


class Watcher:
    def __init__(self, session: Session, opts: Optional[WatchOptions]) -> None:
        self.session = session
        self.opts = opts
        self.rank = session.rank
        self.world = int(os.environ.get("WORLD_SIZE", "1")) if session.rank is not None else 1
        self.clock = StepClock(clock_file(session.run_dir, session.rank), cuda=session._cuda)
        self.trigger = (
            Trigger(TriggerRule(opts.slower, opts.every, opts.k, opts.baseline, opts.cooldown))
            if opts
            else None
        )
        self.poller = Poller(session.run_dir) if opts else None
        # in step order; each opens when its step comes and no window is open
        self.planned: list[Planned] = []
        self.open: Optional[Planned] = None
        self.windows: list[dict[str, Any]] = []
        self.children: list[subprocess.Popen[bytes]] = []
        self._undo: Optional[Callable[[], None]] = None
        self._root: Optional[tuple[dict[str, Any], list[float], tuple[int, int, int]]] = None
        self._root_end = 0
        self._due: Optional[str] = None  # a trigger's reason, acted on after this step's bookkeeping

    @property
    def watching(self) -> bool:
        return self.opts is not None

    def start(self) -> Watcher:
        self._undo = self.clock.install_loader_timer()
        if self.opts is not None:
            self.clock.listeners.append(self._feed)
            (self.session.run_dir / "control").mkdir(exist_ok=True)
            self.session.opts.extra["watch"] = {
                "pid": os.getpid(),
                "host": os.uname().nodename,
                "options": asdict(self.opts),
                "windows": self.windows,
            }
        return self

    # ---- every step
    def on_step(self, now: float) -> None:
        s = self.session
        self.clock.tick(s.step_num - 1, now)
        if self.opts is None:
            return
        if self.open is not None and s._prof is None:
            self._finish("steps")
        self._every(s.step_num - 1)
        if self._due is not None:
            self._plan_trigger(self._due)
            self._due = None
        req = self.poller.poll(now) if self.poller else None
        if req is not None:
            self._plan_request(req)
        free = self.open is None and not self._first_window_pending()
        if self.planned and free and s.step_num >= self.planned[0].at_step - self.opts.warmup:
            p = self.planned.pop(0)
            # Its steps fell inside an earlier window: it takes the next ones (the same on every rank, since
            # every rank's windows end at the same step).
            p.at_step = max(p.at_step, s.step_num + self.opts.warmup)
            self._open(p)

    def _feed(self, step: int, ms: float, loader_ms: float) -> None:
        """A step's time is known (on CUDA a step or two late): feed the trigger steps outside any window."""
        if self.trigger is None or self._in_a_window(step):
            return
        reason = self.trigger.feed(step, ms)
        if reason and self._due is None:
            self._due = reason

    def _every(self, step: int) -> None:
        """--capture-every from the step count, not the clock (on CUDA a step's time is known a step or two
        late, by a different amount on each rank): every rank plans the same window at the same step."""
        o = self.opts
        if self.trigger is None or o is None or self._in_a_window(step):
            return
        reason = self.trigger.every_due(step)
        if reason:
            self._plan(Planned(step + 1 + o.warmup, o.steps, reason))

    def _in_a_window(self, step: int) -> bool:
        s = self.session
        first_end = s.opts.skip + s.opts.warmup + s.opts.active if self._root is None else self._root_end
        if step < first_end + 1:
            return True
        return any(w["start_step"] - 1 <= step <= w["start_step"] + w["steps"] for w in self.windows)

    def _first_window_pending(self) -> bool:
        return self._root is None and (self.session._prof is not None or not self.session._profiled)

    # ---- planning
    def _plan_trigger(self, reason: str) -> None:
        """A slowdown: alone, a window at the next steps; under torchrun, whichever rank sees it first asks every
        rank, through the control file, for a window at a step ahead (a rank that lags alone is caught too)."""
        s, o = self.session, self.opts
        assert o is not None
        if self.rank is None:
            self._plan(Planned(s.step_num + o.warmup, o.steps, reason))
            return
        lead = self._lead_steps()
        try:
            req = write_request(s.run_dir, s.step_num + lead, o.steps, by=reason)
        except RequestExists:
            return  # someone asked already: that window serves
        except OSError as e:
            sys.stderr.write(f"idlehound: could not ask the ranks for a window ({e.strerror or e})\n")
            return
        del req  # this rank's poller picks it up like every other rank's
        s._say(
            f"rank {self.rank} saw the job slow down; every rank is asked for a window at step {s.step_num + lead}"
        )

    def _plan_request(self, req: dict[str, Any]) -> None:
        s, o = self.session, self.opts
        assert o is not None
        at = int(req["at_step"])
        late = s.step_num > at - o.warmup
        if late:
            at = s.step_num + o.warmup
        self._plan(Planned(at, max(1, min(int(req["steps"]), 1000)), str(req.get("by", "asked")), req["id"]))
        write_ack(s.run_dir, req["id"], self.rank, state="planned", at_step=at, late=late)

    def _plan(self, p: Planned) -> None:
        """Keep p with the other planned windows, in step order. Every kind is kept (none replaces another), so
        which of two plans a rank learned first (a request is polled by time, not by step) cannot make ranks
        differ; only a slowdown of a single process is served by an asked-for window already planned."""
        if p.request_id is None and p.reason.startswith("slower") and any(q.request_id for q in self.planned):
            return
        self.planned.append(p)
        self.planned.sort(key=lambda q: q.at_step)

    def _lead_steps(self) -> int:
        """About LEAD_S seconds of steps at the present pace (the slowed one: the steady pace would overshoot)."""
        t = self.trigger
        ms = (t.rolling_ms or t.steady_ms) if t else None
        return max(10, math.ceil(LEAD_S * 1e3 / ms)) if ms else 10

    # ---- opening and closing a window
    def _open(self, p: Planned) -> None:
        s, o = self.session, self.opts
        assert o is not None
        refused = self._refusal()
        if refused:
            self._note(p, "refused", refused)
            return
        folder = window_dir(s.run_dir, p.at_step)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            self._note(p, "refused", f"cannot create {folder} ({e.strerror or e})")
            return
        if self._root is None:
            self._root = (dict(s.window_info), list(s.window), (s.opts.skip, s.opts.warmup, s.opts.active))
            self._root_end = s.opts.skip + s.opts.warmup + s.opts.active
        self.clock.flush()  # the curve up to the window is on disk, should the job die inside it
        info = self._window_info(p, "recording")
        self._write_window(folder, info)
        self.windows.append(info)
        self.open = p
        s._say(f"window at step {p.at_step} ({p.steps} steps): {p.reason}")
        s.reopen(p.at_step - o.warmup, o.warmup, p.steps, folder)
        if p.request_id:
            write_ack(s.run_dir, p.request_id, self.rank, state="recording", at_step=p.at_step)

    def _refusal(self) -> Optional[str]:
        o = self.opts
        assert o is not None
        if len([w for w in self.windows if w["status"] != "refused"]) >= o.max_windows:
            return f"the cap of {o.max_windows} windows is reached (--max-windows)"
        used = _folder_mb(self.session.run_dir / WINDOWS)
        if used >= o.max_disk_mb:
            return f"windows/ holds {used:.0f} MB, the cap is {o.max_disk_mb:g} MB (--max-windows-mb)"
        free = shutil.disk_usage(self.session.run_dir).free / 2**20
        need = max(self.session.opts.max_window_mb, 64.0)
        if free < need:
            return f"only {free:.0f} MB free on the run folder's disk (a window may need {need:g} MB)"
        return None

    def _finish(self, cut_by: str) -> None:
        s, p = self.session, self.open
        assert p is not None
        self.open = None
        folder = window_dir(s.run_dir, p.at_step)
        traces = self._own_traces(folder)
        cut = s.window_info.get("cut_by", cut_by)
        info = self._window_info(p, "saved" if traces else "empty")
        info.update(cut_by=cut, traces=traces, seconds=s.window_info.get("seconds"))
        if not traces:
            info["note"] = f"no trace was written (ended by {cut})"
        self._write_window(folder, info)
        self.windows[-1] = info
        if self._root is not None:
            s.window_info, s.window = dict(self._root[0]), list(self._root[1])
            s.opts.skip, s.opts.warmup, s.opts.active = self._root[2]  # run.json describes the first window
        s.trace_dir, s.later_window = s.run_dir, False
        if self.trigger is not None:
            self.trigger.window_ended(p.at_step + p.steps, slowdown=p.reason.startswith("slower"))
        if p.request_id:
            self._last_ack(p.request_id, state=info["status"], window=str(folder))
        if traces and self.opts and self.opts.analyse:
            self._analyse(folder)

    def _own_traces(self, folder: Path) -> list[str]:
        """This rank's traces in the window's folder (the other ranks write theirs beside them)."""
        mine = f"{self.session.worker}."
        try:
            return sorted(
                f.name for f in folder.iterdir() if is_trace_name(f.name) and f.name.startswith(mine)
            )
        except OSError:
            return []

    def _last_ack(self, request_id: str, **state: Any) -> None:
        """This rank's last word on a request; the last rank to give it retires the request for the next one."""
        write_ack(self.session.run_dir, request_id, self.rank, **state)
        final = [a for a in read_acks(self.session.run_dir, request_id) if a.get("state") in FINAL]
        if len(final) >= self.world:
            retire_request(self.session.run_dir, request_id)

    def _analyse(self, folder: Path) -> None:
        """`idlehound analyze` of this rank's trace in a child process at low priority, off the training
        thread's critical path: report.json, or report.rankN.json per rank (each rank analyses its own)."""
        out = run_file(folder, self.rank, "report")
        cmd = [sys.executable, "-m", "idlehound", "analyze", str(folder), "-o", str(out)]
        if self.rank is not None:
            cmd += ["--worker", self.session.worker]
        if shutil.which("nice"):
            cmd = ["nice", "-n", "10", *cmd]
        try:
            with open(run_file(folder, self.rank, "analysis").with_suffix(".log"), "w") as log:
                child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL)
            self.children.append(child)
        except OSError as e:
            sys.stderr.write(
                f"idlehound: could not start the window's analysis ({e}); `idlehound report` will\n"
            )

    def _note(self, p: Planned, status: str, why: str) -> None:
        info = {**self._window_info(p, status), "note": why}
        self.windows.append(info)
        self.session._say(f"no window at step {p.at_step}: {why}")
        if p.request_id:
            self._last_ack(p.request_id, state=status, note=why)

    def _window_info(self, p: Planned, status: str) -> dict[str, Any]:
        return {
            "start_step": p.at_step,
            "steps": p.steps,
            "reason": p.reason,
            "status": status,
            "folder": f"{WINDOWS}/step{p.at_step}",
            "request": p.request_id,
        }

    def _write_window(self, folder: Path, info: dict[str, Any]) -> None:
        path = run_file(folder, self.rank, WINDOW)  # each rank its own: a rank may save what another did not
        try:
            write_text(path, json.dumps({**info, "rank": self.rank}, indent=2))
        except OSError as e:
            sys.stderr.write(f"idlehound: could not write {path} ({e.strerror or e})\n")

    # ---- the end of the run
    def close(self, ended_by: str) -> None:
        """After the session saved a window still open: say how it ended; flush the clock; undo the timer."""
        if self.open is not None:
            self._finish(ended_by)
        for p in self.planned:
            self._note(p, "not reached", "the job ended before this window's first step")
        self.planned = []
        self.clock.close()
        if self._undo is not None:
            self._undo()
            self._undo = None
        deadline = time.monotonic() + 30
        for child in self.children:  # a short job: let the windows' analyses finish for the report
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=max(0.0, deadline - time.monotonic()))


def _folder_mb(folder: Path) -> float:
    total = 0
    for root, _, files in os.walk(folder):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(root, f)).st_size
    return total / 2**20
