"""A trace file truncated by another process while it is being read: a clean error or a correct result, never
a crash (a memory-mapped file that shrinks raises SIGBUS on the next touch of a vanished page)."""

import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from idlehound import TraceError, _limits, load_trace

ROOT = Path(__file__).resolve().parents[2]
EVENTS = 150_000  # ~10 MB: loading takes long enough for a truncation to land inside it


def _write(path: Path, n: int = EVENTS) -> Path:
    with open(path, "wb") as f:
        f.write(b'{"traceEvents":[')
        f.write(
            ",".join(
                f'{{"ph":"X","cat":"cpu_op","name":"op{i % 50}","pid":1,"tid":1,"ts":{i},"dur":1}}'
                for i in range(n)
            ).encode()
        )
        f.write(b"]}")
    return path


def _truncate_later(path: Path, delay: float, size: int) -> threading.Thread:
    def cut():
        time.sleep(delay)
        os.truncate(path, size)

    t = threading.Thread(target=cut)
    t.start()
    return t


@pytest.mark.slow  # seconds of work on its own; CI runs it
def test_truncated_while_loading_is_a_clean_error_or_the_whole_trace(tmp_path):
    whole = load_trace(_write(tmp_path / "ref.pt.trace.json"))
    t0 = time.perf_counter()
    load_trace(tmp_path / "ref.pt.trace.json")
    span = time.perf_counter() - t0
    rng = random.Random(2)
    outcomes = []
    for i in range(5):
        path = _write(tmp_path / f"t{i}.pt.trace.json")
        cut = _truncate_later(path, rng.uniform(0, span), rng.choice([0, 1000, path.stat().st_size // 2]))
        try:
            tr = load_trace(path)
        except TraceError as e:
            msg = str(e)
            assert str(path) in msg and "\n" not in msg, msg
            outcomes.append("error")
        else:  # read before the cut: every event, exactly
            assert len(tr.events) == len(whole.events)
            assert (tr.events.ts == whole.events.ts).all()
            outcomes.append("loaded")
        finally:
            cut.join()
    assert len(outcomes) == 5


@pytest.mark.parametrize("kernel_copy", [True, False])
def test_truncated_during_the_copy_is_a_clean_error(tmp_path, monkeypatch, kernel_copy):
    """The file is copied before it is mapped; a truncation that lands in the copy is reported, not mapped."""
    path = _write(tmp_path / "x.pt.trace.json", 20_000)
    real_copy, real_pread = getattr(os, "copy_file_range", None), os.pread

    def copy_after_cut(src, dst, count, offset_src, offset_dst):
        os.truncate(path, 100)
        return real_copy(src, dst, count, offset_src, offset_dst)

    def no_copy(*a):
        raise OSError(38, "not supported here")

    def pread_then_cut(fd, n, offset):
        piece = real_pread(fd, n, offset)
        os.truncate(path, 100)
        return piece

    if kernel_copy:
        if real_copy is None:
            pytest.skip("no os.copy_file_range here")
        monkeypatch.setattr(_limits.os, "copy_file_range", copy_after_cut)
    else:
        monkeypatch.setattr(_limits.os, "copy_file_range", no_copy, raising=False)
        monkeypatch.setattr(_limits, "_READ_BYTES", 64 * 1024)
        monkeypatch.setattr(_limits.os, "pread", pread_then_cut)
    with pytest.raises(TraceError, match="changed while it was read") as e:
        load_trace(path)
    assert str(path) in str(e.value)


def test_the_loaded_trace_does_not_depend_on_the_file_after_loading(tmp_path):
    """Mapped pages are dropped as parsed and read back later: they come from the private copy."""
    path = _write(tmp_path / "y.pt.trace.json", 20_000)
    with open(path, "rb") as f:
        buf = _limits.read_limited(f, path, 2**30, gz=False)
    first = bytes(buf[:64])
    os.truncate(path, 0)
    _limits.release(buf, 0, len(buf))
    assert path.stat().st_size == 0 and first.startswith(b'{"traceEvents":[{"ph":"X"')
    assert bytes(buf[:64]) == first  # read back from the copy, not from the emptied file


@pytest.mark.slow  # seconds of subprocesses: CI runs it (-m "slow or not slow")
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_cli_on_a_file_truncated_mid_analysis_exits_cleanly(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "IDLEHOUND_JOBS": "1"}
    rng = random.Random(3)
    codes = []
    for i in range(4):
        path = _write(tmp_path / f"c{i}.pt.trace.json")
        p = subprocess.Popen(
            [sys.executable, "-m", "idlehound", "analyze", str(path)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(rng.uniform(1.0, 3.0))  # past start-up, into reading and decoding
        os.truncate(path, rng.choice([0, path.stat().st_size // 3]))
        _, err = p.communicate(timeout=300)
        assert p.returncode in (0, 2), f"exit {p.returncode} (negative: killed by a signal): {err[-500:]}"
        assert "Traceback" not in err
        if p.returncode == 2:
            assert err.count("\n") == 1 and str(path) in err, err
        codes.append(p.returncode)
    assert len(codes) == 4
