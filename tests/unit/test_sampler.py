"""The CPU sampler's readings stay within what samples.json may hold (CI saw one above 100%)."""

import itertools
import json
import time

import pytest

from idlehound import sampler as _sampler
from idlehound.errors import TraceError
from idlehound.runfolder import read_samples


def test_cpu_samples_read_in_clock_ticks_never_exceed_the_machine(tmp_path, monkeypatch):
    ticks = itertools.count(step=1000.0)  # each reading 1000 CPU-seconds later: far above any real machine
    monkeypatch.setattr(_sampler, "_cpu_seconds", lambda: next(ticks))
    s = _sampler.Sampler(hz=200.0)
    s._handle = None  # CPU sampling even where NVML happens to be present
    s.start()
    time.sleep(0.1)
    doc = s.stop()
    assert doc["samples"] and all(0.0 <= u <= 100.0 for _, u, _ in doc["samples"])
    (tmp_path / "samples.json").write_text(json.dumps(doc))
    assert len(read_samples(tmp_path / "samples.json")["samples"]) == len(doc["samples"])


def test_an_earlier_cpu_reading_above_the_machine_loads_capped_and_gpu_readings_stay_strict(tmp_path):
    f = tmp_path / "samples.json"
    f.write_text(json.dumps({"source": "cpu", "samples": [[0.1, 50.0, 0.0], [0.2, 137.5, 0.0]]}))
    assert [u for _, u, _ in read_samples(f)["samples"]] == [50.0, 100]
    f.write_text(json.dumps({"source": "nvml", "samples": [[0.1, 137.5, 10.0]]}))
    with pytest.raises(TraceError, match="out of range"):
        read_samples(f)
