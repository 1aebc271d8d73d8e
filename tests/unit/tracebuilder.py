"""Build small Kineto-format traces in code, for exact-value tests. Times in µs, as in the JSON."""

from __future__ import annotations

import json
from typing import Optional

H200 = {
    "id": 0,
    "name": "NVIDIA H200",
    "totalGlobalMem": 150109880320,
    "computeMajor": 9,
    "computeMinor": 0,
    "numSms": 132,
    "maxThreadsPerMultiprocessor": 2048,
}


class TraceBuilder:
    def __init__(self, cuda: bool = True, pid: int = 100, tid: int = 1) -> None:
        self.events: list[dict] = []
        self.cuda = cuda
        self.pid, self.tid = pid, tid
        self._corr = 1000
        self._ext = 1
        self._py = 1

    def _x(self, cat, name, ts, dur, pid=None, tid=None, **args) -> dict:
        e = {
            "ph": "X",
            "cat": cat,
            "name": name,
            "pid": self.pid if pid is None else pid,
            "tid": self.tid if tid is None else tid,
            "ts": ts,
            "dur": dur,
            "args": args,
        }
        self.events.append(e)
        return e

    def step(self, n: int, ts: float, dur: float) -> None:
        ext = self._next_ext()
        self._x("user_annotation", f"ProfilerStep#{n}", ts, dur, **{"External id": ext})
        if self.cuda:  # the GPU-side copy that must never count as a step
            self._x(
                "gpu_user_annotation", f"ProfilerStep#{n}", ts + 1, dur, pid=0, tid=7, **{"External id": ext}
            )

    def _next_ext(self) -> int:
        self._ext += 1
        return self._ext

    def op(self, name: str, ts: float, dur: float, tid: Optional[int] = None, types=None) -> int:
        ext = self._next_ext()
        args = {"External id": ext}
        if types is not None:
            args["Input type"] = types
        self._x("cpu_op", name, ts, dur, tid=tid, **args)
        return ext

    def runtime(
        self, name: str, ts: float, dur: float, ext: Optional[int] = None, tid=None, cat="cuda_runtime"
    ) -> int:
        self._corr += 1
        args = {"correlation": self._corr, "cbid": 1}
        if ext is not None:
            args["External id"] = ext
        self._x(cat, name, ts, dur, tid=tid, **args)
        return self._corr

    def kernel(
        self,
        name: str,
        ts: float,
        dur: float,
        launch_ts: float,
        launch_dur: float = 5.0,
        ext: Optional[int] = None,
        tid=None,
        device: int = 0,
        stream: int = 7,
        bps: float = 2.0,
        occ: int = 50,
    ) -> int:
        corr = self.runtime("cudaLaunchKernel", launch_ts, launch_dur, ext=ext, tid=tid)
        self._x(
            "kernel",
            name,
            ts,
            dur,
            pid=device,
            tid=stream,
            correlation=corr,
            device=device,
            stream=stream,
            **{"blocks per SM": bps, "est. achieved occupancy %": occ, "External id": ext or 0},
        )
        return corr

    def memcpy(
        self,
        kind: str,
        ts: float,
        dur: float,
        nbytes: int,
        launch_ts: float,
        launch_dur: float = 5.0,
        ext: Optional[int] = None,
        tid=None,
    ) -> int:
        corr = self.runtime("cudaMemcpyAsync", launch_ts, launch_dur, ext=ext, tid=tid)
        self._x(
            "gpu_memcpy", f"Memcpy {kind}", ts, dur, pid=0, tid=7, correlation=corr, bytes=nbytes, device=0
        )
        return corr

    def dataloader(self, ts: float, dur: float, workers: bool = False) -> None:
        it = "_MultiProcessingDataLoaderIter" if workers else "_SingleProcessDataLoaderIter"
        self._x(
            "user_annotation",
            f"enumerate(DataLoader)#{it}.__next__",
            ts,
            dur,
            **{"External id": self._next_ext()},
        )

    def python(self, name: str, ts: float, dur: float, parent: Optional[int] = None, tid=None) -> int:
        self._py += 1
        self._x(
            "python_function", name, ts, dur, tid=tid, **{"Python id": self._py, "Python parent id": parent}
        )
        return self._py

    def to_bytes(self, **top) -> bytes:
        doc = {
            "schemaVersion": 1,
            "deviceProperties": [H200] if self.cuda else [],
            "traceEvents": self.events,
            "baseTimeNanoseconds": 1_790_000_000_000_000_000,
        }
        if self.cuda:
            doc["cuda_runtime_version"] = 13000
        doc.update(top)
        return json.dumps(doc).encode()
