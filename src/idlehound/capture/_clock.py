"""The step clock: every step's time, loader wait and GPU memory, appended to the run folder as the job runs.

Always on, so it must cost next to nothing outside a window:
- on CUDA steps are timed by events recorded at their ends; events are read only once `query()` says the GPU has
  passed them (no synchronisation is ever added), so a row is written a step or two after its step ended. Where
  steps are shorter than `min_gap_s` (20 ms) on the host, an event ends a group of steps rather than every step,
  and each step of the group gets the group's mean: on the H200 an event per step cost a launch-bound 2.5 ms step
  3-4% (far more than the 6-9 us the call takes), an event per >= 20 ms 0.3%, as much as timing nothing;
- without a GPU, by the host clock;
- rows are buffered and appended at most once a second; past `max_rows` rows the file is rewritten once with
  every two rows merged into one, and later rows each hold twice as many steps (bounded for week-long jobs).

A row of steps.jsonl (after one header object): [first_step, steps, mean_ms, max_ms, loader_ms, mem_mib, t_s]
where loader_ms is the mean wait in DataLoader.__next__ per step, mem_mib the memory PyTorch had allocated when last
sampled before the bin's last step (null without CUDA; sampled at most once per flush interval, since
torch.cuda.memory_allocated() builds the allocator's whole statistics dict: ~100 us, a twentieth of a 2 ms step)
and t_s the seconds since the clock started at the bin's end.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

MAX_ROWS = 20000
FLUSH_S = 1.0
MIN_GAP_S = 0.02  # CUDA events at least this far apart on the host clock
CLOCK_VERSION = 1


class StepClock:
    def __init__(
        self,
        path: Path,
        cuda: bool,
        max_rows: int = MAX_ROWS,
        flush_s: float = FLUSH_S,
        min_gap_s: float = MIN_GAP_S,
    ) -> None:
        self.path = path
        self.min_gap_s = min_gap_s
        self.max_rows = max(2, max_rows)
        self.flush_s = flush_s
        self.cuda = cuda
        self.width = 1  # steps per row
        self.rows_written = 0
        self.last_step = -1  # the newest step whose time is known
        self.last_recorded = -1  # the step the newest CUDA event ends
        self.failed: Optional[str] = None
        self._t0: Optional[float] = None  # the first step's end
        self._t_prev: Optional[float] = None
        self._t_flush = 0.0
        self._t_mem = -1e18  # when memory was last sampled
        self._mem: Optional[float] = None
        self._loader_s = 0.0
        self._buffer: list[list[Any]] = []
        self._bin: Optional[list[Any]] = None  # [first, n, sum_ms, max_ms, loader_ms_sum, mem, t]
        # (last step, event, steps it ends, their loader ms, memory, host time), oldest first
        self._pending: collections.deque[tuple[int, Any, int, float, Optional[float], float]] = (
            collections.deque()
        )
        self._group = [0, 0.0]  # steps since the last event, their loader ms
        self._t_event = -1e18
        self._torch: Any = None
        self._free: list[Any] = []  # events already read, recorded again (no create/destroy per step)
        self.listeners: list[Callable[[int, float, float], None]] = []  # (step, ms, loader_ms) as known
        if cuda:
            import torch

            self._torch = torch
        self._write_header()

    # ---- what the session calls
    def install_loader_timer(self) -> Callable[[], None]:
        """Time every DataLoader.__next__ (the loader wait, whatever marks the steps); returns the undo."""
        from torch.utils.data import dataloader as dl

        original = dl._BaseDataLoaderIter.__next__
        clock = self

        def __next__(it: Any) -> Any:
            t = time.perf_counter()
            try:
                return original(it)
            finally:
                clock._loader_s += time.perf_counter() - t

        dl._BaseDataLoaderIter.__next__ = __next__  # timing the loader, on purpose
        return lambda: setattr(dl._BaseDataLoaderIter, "__next__", original)

    def tick(self, step: int, now: float) -> None:
        """Step `step` ended at host time `now` (time.monotonic)."""
        if self.failed:
            return
        loader_ms, self._loader_s = self._loader_s * 1e3, 0.0
        if self._t0 is None:
            self._t0 = self._t_flush = now
        host_ms = (now - self._t_prev) * 1e3 if self._t_prev is not None else None
        self._t_prev = now
        if self._torch is not None:
            g = self._group
            g[0] += 1
            g[1] += loader_ms
            if now - self._t_event >= self.min_gap_s:
                self._record(step, now)
        elif host_ms is not None:
            self._add(step, 1, host_ms, loader_ms, None, now)
        if now - self._t_flush >= self.flush_s:
            self._t_flush = now
            self.flush()

    def close(self) -> None:
        """Read the events still pending (the job has ended: a sync costs nothing now) and write the rest."""
        if self._torch is not None and self._pending and not self.failed:
            if self._group[0] and self._t_prev is not None:  # the steps after the last event
                self._record(self.last_recorded + int(self._group[0]), self._t_prev)
            try:
                self._pending[-1][1].synchronize()
            except Exception:  # a dead CUDA context: the steps already read stay
                self._pending.clear()
            self._drain()
        if self._bin is not None:
            self._buffer.append(self._row(self._bin))
            self._bin = None
        self.flush()

    # ---- inside
    def _record(self, step: int, now: float) -> None:
        """An event at the end of `step`, closing the group of steps since the last one."""
        self._t_event = now
        if now - self._t_mem >= self.flush_s:
            self._t_mem, self._mem = now, self._memory_mib()
        ev = self._free.pop() if self._free else self._torch.cuda.Event(enable_timing=True)
        ev.record()  # asynchronous; read later, once the GPU has passed it
        n, loader_ms = self._group
        self._pending.append((step, ev, int(n), float(loader_ms), self._mem, now))
        self.last_recorded = step
        self._group = [0, 0.0]
        self._drain()

    def _drain(self) -> None:
        """Turn the oldest event pairs the GPU has passed into step times, without waiting for any."""
        p = self._pending
        while len(p) >= 2 and p[1][1].query():
            e0 = p.popleft()[1]
            step, e1, n, loader_ms, mem, now = p[0]
            self._add(step, n, float(e0.elapsed_time(e1)), loader_ms, mem, now)
            self._free.append(e0)

    def _memory_mib(self) -> Optional[float]:
        try:
            return round(float(self._torch.cuda.memory_allocated()) / 2**20, 1)
        except Exception:
            return None

    def _add(self, step: int, n: int, ms: float, loader_ms: float, mem: Optional[float], now: float) -> None:
        """The n steps ending at `step` took `ms` together (their loader wait `loader_ms`)."""
        self.last_step = step
        first = step - n + 1
        each, loader_each = ms / n, loader_ms / n
        for listen in self.listeners:
            for s in range(first, step + 1):
                listen(s, each, loader_each)
        b = self._bin
        if b is None:
            b = self._bin = [first, 0, 0.0, 0.0, 0.0, mem, 0.0]
        b[1] += n
        b[2] += ms
        b[3] = max(b[3], each)
        b[4] += loader_ms
        b[5] = mem
        b[6] = now - (self._t0 or now)
        if b[1] >= self.width:
            self._buffer.append(self._row(b))
            self._bin = None

    @staticmethod
    def _row(b: list[Any]) -> list[Any]:
        n = b[1]
        return [b[0], n, round(b[2] / n, 4), round(b[3], 4), round(b[4] / n, 4), b[5], round(b[6], 3)]

    def flush(self) -> None:
        if not self._buffer or self.failed:
            return
        rows, self._buffer = self._buffer, []
        try:
            with open(self.path, "a") as f:
                f.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows))
            self.rows_written += len(rows)
            while self.rows_written >= self.max_rows:
                self._coarsen()
        except OSError as e:  # a full disk: the job goes on, the curve stops here and says why
            self._fail(f"cannot append to {self.path} ({e.strerror or e})")

    def _coarsen(self) -> None:
        """Merge every two rows into one and double the steps per row from now on."""
        header, rows = read_clock(self.path)
        merged = merge_pairs(rows)
        header["steps_per_row"] = self.width * 2
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(_lines(header, merged))
        os.replace(tmp, self.path)
        self.width *= 2
        self.rows_written = len(merged)

    def _write_header(self) -> None:
        clock = "cuda_events" if self.cuda else "host"
        header = {
            "idlehound_steps": CLOCK_VERSION,
            "clock": clock,
            "started": time.time(),
            "steps_per_row": 1,
        }
        try:
            self.path.write_text(json.dumps(header) + "\n")
        except OSError as e:
            self._fail(f"cannot write {self.path} ({e.strerror or e})")

    def _fail(self, why: str) -> None:
        self.failed = why
        sys.stderr.write(f"idlehound: the step clock stopped: {why}; training goes on\n")


def merge_pairs(rows: list[list[Any]]) -> list[list[Any]]:
    """Rows two by two into one: steps add up, the mean is weighted, the max kept, memory and time the later's."""
    out = []
    for i in range(0, len(rows), 2):
        a = rows[i]
        if i + 1 == len(rows):
            out.append(a)
            continue
        b = rows[i + 1]
        n = a[1] + b[1]
        out.append(
            [
                a[0],
                n,
                round((a[2] * a[1] + b[2] * b[1]) / n, 4),
                max(a[3], b[3]),
                round((a[4] * a[1] + b[4] * b[1]) / n, 4),
                b[5],
                b[6],
            ]
        )
    return out


def read_clock(path: Path) -> tuple[dict[str, Any], list[list[Any]]]:
    """The header and the rows of a steps.jsonl; a torn last line (the job died writing it) is left out.

    Raises ValueError naming the line when the file is not a step clock."""
    header: dict[str, Any] = {}
    rows: list[list[Any]] = []
    with open(path) as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            if i >= len(lines) - 2:  # the last line, cut short
                break
            raise ValueError(f"line {i + 1} is not JSON") from None
        if i == 0:
            if not isinstance(value, dict) or "idlehound_steps" not in value:
                raise ValueError("line 1 is not a step-clock header")
            header = value
        elif _is_row(value):
            rows.append(value)
        else:
            raise ValueError(
                f"line {i + 1} is not a step row [first, steps, mean_ms, max_ms, loader_ms, mem, t]"
            )
    return header, rows


def _is_row(v: Any) -> bool:
    if not (isinstance(v, list) and len(v) == 7):
        return False
    nums = [v[0], v[1], v[2], v[3], v[4], v[6]] + ([v[5]] if v[5] is not None else [])
    ok = all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and x == x and abs(x) < 1e15 for x in nums
    )
    return ok and isinstance(v[0], int) and isinstance(v[1], int) and v[1] >= 1 and v[0] >= 0


def _lines(header: dict[str, Any], rows: list[list[Any]]) -> str:
    return json.dumps(header) + "\n" + "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows)
