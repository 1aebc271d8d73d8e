"""Why the C decoder is slower on one machine than another: the same pieces decoded by it and by msgspec (also C),
json.loads of the same bytes, and the compiler flags the extension was built with.

    python3 benchmarks/device_decode.py [MB]
"""

from __future__ import annotations

import json
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "src"))


def best(fn, n: int = 3) -> float:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def main() -> None:
    import bench_analyze as b
    import msgspec

    from idlehound.trace import _decode, _native, _parallel

    print("CC", sysconfig.get_config_var("CC"), "| CFLAGS", sysconfig.get_config_var("CFLAGS"))
    print("OPT", sysconfig.get_config_var("OPT"), "| msgspec", msgspec.__version__, "| so", _native.__file__)
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.json"
        b.build(ROOT / "tests" / "traces" / "demo", mb, path)
        buf = path.read_bytes()
    mv = memoryview(buf)
    lo = buf.find(b"[", buf.find(b'"traceEvents"')) + 1
    hi = buf.rfind(b"]")
    pieces = list(_parallel._pieces(mv, lo, hi))
    joined = [b"[" + bytes(mv[a:c]) + b"]" for a, c in pieces]

    def c_decode() -> None:
        d = _native.Decoder()
        for a, c in pieces:
            d.decode(mv, a, c)

    def msgspec_decode() -> None:
        for p in joined:
            _decode.decode_batch(p, known=True)

    def msgspec_raw() -> None:
        for p in joined:
            msgspec.json.decode(p)

    size = len(buf) / 1e6
    for name, fn in (
        ("C decoder", c_decode),
        ("msgspec typed", msgspec_decode),
        ("msgspec untyped", msgspec_raw),
    ):
        dt = best(fn)
        print(f"{name:16} {dt:6.3f} s  {size / dt:7.0f} MB/s")
    dt = best(lambda: json.loads(buf), 1)
    print(f"{'json.loads':16} {dt:6.3f} s  {size / dt:7.0f} MB/s")


if __name__ == "__main__":
    main()
