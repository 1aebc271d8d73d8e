"""The step clock's CUDA path without a GPU: events on a fake device clock that runs behind the host, as a GPU
does, so the grouping of short steps and the late reading of events are exercised as they run on the H200."""

import sys
from types import SimpleNamespace
from unittest import mock

import pytest

from idlehound.capture._clock import StepClock, read_clock


class FakeGPU:
    """A device whose work for step k ends at ends[k] (ms); `now_ms` is how far it has got."""

    def __init__(self) -> None:
        self.now_ms = 0.0
        self.queue_end = 0.0
        self.created = 0

    def Event(self, enable_timing: bool = True):  # noqa: N802  (torch.cuda.Event)
        gpu = self
        gpu.created += 1

        class Event:
            def record(self) -> None:
                self.at = gpu.queue_end

            def query(self) -> bool:
                return gpu.now_ms >= self.at

            def elapsed_time(self, other) -> float:
                return other.at - self.at

            def synchronize(self) -> None:
                gpu.now_ms = max(gpu.now_ms, self.at)

        return Event()

    def memory_allocated(self) -> int:
        return 3 * 2**20


def run_clock(tmp_path, step_ms: list[float], host_gap_s: float):
    gpu = FakeGPU()
    # the clock's own `import torch` gets the fake device: these tests need no torch
    with mock.patch.dict(sys.modules, {"torch": SimpleNamespace(cuda=gpu)}):
        clock = StepClock(tmp_path / "steps.jsonl", cuda=True, flush_s=0.0)
    clock._torch = SimpleNamespace(cuda=gpu)
    heard: list[tuple[int, float]] = []
    clock.listeners.append(lambda step, ms, loader_ms: heard.append((step, ms)))
    now = 0.0
    for step, ms in enumerate(step_ms):
        gpu.queue_end += ms  # the step's kernels, queued
        now += host_gap_s
        clock.tick(step, now)
        gpu.now_ms = gpu.queue_end - 2 * ms  # the GPU runs two steps behind the host
    clock.close()
    return clock, gpu, heard, read_clock(tmp_path / "steps.jsonl")


def test_short_steps_are_timed_in_groups_with_every_step_counted(tmp_path):
    steps = [1.0] * 100 + [3.0] * 100  # GPU ms per step; the host ends a step every 0.5 ms
    clock, gpu, heard, (header, rows) = run_clock(tmp_path, steps, host_gap_s=0.0005)
    assert header["clock"] == "cuda_events"
    assert sum(r[1] for r in rows) == 199  # step 0 has no event before it
    assert max(r[1] for r in rows) >= 30  # grouped: an event every >= 20 ms of host time, 40 steps
    assert gpu.created <= 8  # events are reused once read, not made per step
    total = sum(r[1] * r[2] for r in rows)
    assert total == pytest.approx(sum(steps[1:]))
    assert [s for s, _ in heard] == list(range(1, 200))  # the trigger hears every step, in order
    assert rows[0][2] == pytest.approx(1.0) and rows[-1][2] == pytest.approx(3.0)
    assert rows[-1][5] == 3.0  # memory, MiB


def test_long_steps_get_an_event_each(tmp_path):
    steps = [25.0] * 30
    _, _, heard, (_, rows) = run_clock(tmp_path, steps, host_gap_s=0.025)
    assert [r[1] for r in rows] == [1] * 29
    assert all(ms == pytest.approx(25.0) for _, ms in heard)
