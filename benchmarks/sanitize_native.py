"""Run the C decoder (trace/_native.c) under AddressSanitizer and UBSan, with a guard page after each piece.

    python benchmarks/sanitize_native.py [--pieces 20000] [--seed 3] [--no-tests]

Builds trace/_native.c with -fsanitize=address,undefined (gcc or clang; -O1, frame pointers, traps on any UBSan
report) into a temporary folder, then in a child process with the ASan runtime preloaded (Python itself is not
instrumented; leak checks off: the interpreter's own allocations would swamp them) and that build standing in for
idlehound.trace._native:
  1. tests/test_native.py (every recorded trace, the hand-made edge cases, mutated traces, both decode paths);
  2. --pieces mutated pieces from benchmarks/fuzz_native.py (all-dropped ones among them), each decoded alone
     with its last byte just before a PROT_NONE page (a read one byte past the piece faults at once), then the
     same pieces through both decode paths as fuzz_native compares them.
Prints what ran and the sanitizer's verdict; exits non-zero on any report, crash or difference. Linux only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "idlehound" / "trace" / "_native.c"
FLAGS = [
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=undefined",
    "-fno-omit-frame-pointer",
    "-g",
    "-O1",
]

CHILD = r"""
import ctypes, importlib.util, mmap, os, random, sys, time
spec = importlib.util.spec_from_file_location("idlehound.trace._native", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
sys.modules["idlehound.trace._native"] = mod
import idlehound.trace
idlehound.trace._native = mod
from idlehound.trace import _table
assert _table._native is mod, "the sanitized build is not the one in use"
pieces, seed, tests = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
sys.path[:0] = [sys.argv[5], sys.argv[5] + "/benchmarks"]
if tests:
    import pytest
    rc = pytest.main(["-q", "-p", "no:cacheprovider", sys.argv[5] + "/tests/test_native.py"])
    print("TESTS", int(rc), flush=True)
    if rc:
        sys.exit(1)
import fuzz_native as fz

PAGE = mmap.PAGESIZE
libc = ctypes.CDLL(None, use_errno=True)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]

def guarded(piece):
    # piece ends right before a PROT_NONE page: one byte read past it faults
    n = -(-len(piece) // PAGE) * PAGE
    m = mmap.mmap(-1, n + PAGE)
    base = ctypes.addressof(ctypes.c_char.from_buffer(m))
    if libc.mprotect(base + n, PAGE, 0) != 0:
        raise OSError(ctypes.get_errno(), "mprotect")
    lo = n - len(piece)
    m[lo:n] = piece
    return m, lo, n

rng = random.Random(seed)
events = fz.load_events()
serial = [0]
done = taken = dropped = cases = diffs = 0
t0 = time.perf_counter()
while done < pieces:
    made = [fz.make_piece(events, rng, serial) for _ in range(rng.randint(2, 12))]
    for kind, p in made:
        m, lo, hi = guarded(p)
        r = mod.Decoder().decode(m, lo, hi)
        taken += r is not None
        dropped += r is not None and kind == "dropped"
        del r
        done += 1
    cases += 1
    if fz.same(fz.outcome([p for _, p in made], True), fz.outcome([p for _, p in made], False)):
        diffs += 1
print(f"PIECES {done} taken {taken} all-dropped-taken {dropped} cases {cases} differences {diffs} "
      f"in {time.perf_counter() - t0:.0f} s", flush=True)
sys.exit(1 if diffs else 0)
"""


def build(tmp: Path) -> Path:
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        sys.exit("no C compiler (gcc or clang) found")
    ext = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    out = tmp / ("_native" + ext)
    inc = sysconfig.get_paths()["include"]
    cmd = [cc, *FLAGS, "-std=c99", "-shared", "-fPIC", f"-I{inc}", str(SRC), "-o", str(out)]
    subprocess.run(cmd, check=True)
    return out


def runtime(cc_lib: str) -> str:
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang") or "gcc"
    path = subprocess.run([cc, f"-print-file-name={cc_lib}"], capture_output=True, text=True).stdout.strip()
    if not path or not Path(path).exists():
        sys.exit(f"the compiler has no {cc_lib} (install its sanitizer runtime)")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pieces", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--no-tests", action="store_true", help="skip tests/test_native.py")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        so = build(Path(tmp))
        env = {
            **os.environ,
            "LD_PRELOAD": runtime("libasan.so"),
            "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:allocator_may_return_null=1",
            "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
            "PYTHONPATH": str(ROOT / "src"),
            "IDLEHOUND_JOBS": "1",
        }
        print(f"built {SRC.name} with {' '.join(FLAGS)}", flush=True)
        args = [str(so), str(a.pieces), str(a.seed), "0" if a.no_tests else "1", str(ROOT)]
        r = subprocess.run([sys.executable, "-c", CHILD, *args], env=env, capture_output=True, text=True)
    out = r.stdout + r.stderr
    reports = out.count("ERROR: AddressSanitizer") + out.count("runtime error:")
    for line in out.splitlines():
        if line.startswith(("TESTS", "PIECES")) or "passed" in line or "failed" in line:
            print(" ", line)
    print(f"sanitizer reports: {reports}; child exit code {r.returncode}")
    if reports or r.returncode:
        print(out[-4000:])
        sys.exit(1)


if __name__ == "__main__":
    main()
