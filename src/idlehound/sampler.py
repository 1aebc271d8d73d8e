"""Whole-run utilisation sampler: NVML GPU utilisation and memory at ~15 Hz, else process CPU use."""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Optional


class Sampler:
    """Samples in a daemon thread until stop(); cheap enough to run through the whole job."""

    def __init__(self, hz: float = 15.0, device_index: int = 0) -> None:
        self.period = 1.0 / hz
        self.t0 = time.monotonic()
        self.samples: list[tuple[float, float, float]] = []  # (t, util %, memory MiB)
        self.source = "none"
        self.note = ""
        self._stop = threading.Event()
        self._handle = self._nvml(device_index)
        self._thread = threading.Thread(target=self._loop, name="idlehound-sampler", daemon=True)

    def _nvml(self, index: int) -> Optional[Any]:
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self._pynvml = pynvml
            self.source = "nvml"
            return handle
        except Exception as e:  # no driver, no GPU, or nvidia-ml-py missing
            self.source = "cpu"
            self.note = f"NVML unavailable ({type(e).__name__}); sampled this process's CPU use instead"
            return None

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def _loop(self) -> None:
        last_cpu, last_t = _cpu_seconds(), time.monotonic()
        while not self._stop.wait(self.period):
            now = time.monotonic()
            if self._handle is not None:
                try:
                    u = self._pynvml.nvmlDeviceGetUtilizationRates(self._handle)
                    m = self._pynvml.nvmlDeviceGetMemoryInfo(self._handle)
                    self.samples.append((now - self.t0, float(u.gpu), m.used / 2**20))
                except Exception:
                    pass
                continue
            cpu = _cpu_seconds()
            share = 100.0 * (cpu - last_cpu) / max(now - last_t, 1e-6) / (os.cpu_count() or 1)
            # CPU time is counted in clock ticks: a short interval can read above 100% of the machine.
            self.samples.append((now - self.t0, min(max(share, 0.0), 100.0), 0.0))
            last_cpu, last_t = cpu, now

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)
        return {
            "source": self.source,
            "note": self.note,
            "hz": round(1 / self.period, 1),
            "t0_monotonic": self.t0,
            "samples": [[round(t, 3), round(u, 1), round(m, 1)] for t, u, m in self.samples],
        }


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def summarize(sampler: dict[str, Any], window: Optional[tuple[float, float]] = None) -> dict[str, Any]:
    """Mean utilisation over the run and the profiled window, and whether it saw-tooths."""
    s = sampler.get("samples") or []
    if not s:
        return {"source": sampler.get("source", "none"), "samples": 0}
    util = [u for _, u, _ in s]
    out = {"source": sampler["source"], "samples": len(s), "mean_util": round(sum(util) / len(util), 1)}
    if window:
        w = [u for t, u, _ in s if window[0] <= t <= window[1]]
        if w:
            out["window_mean_util"] = round(sum(w) / len(w), 1)
    low = [u < 10 for u in util]
    flips = sum(1 for a, b in zip(low, low[1:]) if a != b)
    idle_share = sum(low) / len(low)
    out["idle_sample_share"] = round(idle_share, 3)
    # Alternating busy and idle samples: the GPU works in bursts and waits between them (data loading).
    out["sawtooth"] = sampler["source"] == "nvml" and 0.15 <= idle_share <= 0.85 and flips >= len(s) / 8
    return out
