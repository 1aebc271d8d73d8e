"""Size and time of the annotated trace (`idlehound report RUN -o NAME.pt.trace.json[.gz]`) per recorded trace.

    PYTHONPATH=src python benchmarks/bench_annotated.py [TRACE_OR_FOLDER ...]   # default: every tests/traces trace

Prints, for each trace: its JSON size, the bytes idlehound added (and that as a share of the trace: the target is
at most 10%), the added events, and the seconds to analyse and to write the plain and the gzipped file. Figures,
not a test: tests/test_annotated.py holds the format and the equal analysis.
"""

from __future__ import annotations

import gzip
import shutil
import sys
import tempfile
import time
from pathlib import Path

from idlehound.pipeline import analyze_path
from idlehound.report.annotated import annotation_events, write_annotated

TRACES = Path(__file__).resolve().parents[1] / "tests" / "traces"


def _size(path: Path) -> int:
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    with gzip.open(path, "rb") if gz else open(path, "rb") as f:
        return sum(len(b) for b in iter(lambda: f.read(1 << 22), b""))


def main(args: list[str]) -> None:
    roots = [Path(a) for a in args] or [TRACES]
    traces = sorted(t for r in roots for t in ([r] if r.is_file() else r.rglob("*.pt.trace.json*")))
    print(
        f"{'trace':<58} {'JSON MB':>8} {'added KB':>9} {'share':>7} {'events':>7} {'analyse s':>9} {'write s':>8} {'gz s':>6}"
    )
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for t in traces:
            t0 = time.perf_counter()
            res = analyze_path(t)
            t1 = time.perf_counter()
            out, added = write_annotated(res.analysis, res.findings, Path(tmp) / "a.pt.trace.json")
            t2 = time.perf_counter()
            write_annotated(res.analysis, res.findings, Path(tmp) / "a.pt.trace.json.gz")
            t3 = time.perf_counter()
            size = _size(t)
            assert _size(out) == size + added
            n = sum(1 for _ in annotation_events(res.analysis, res.findings))
            share = added / size
            worst = max(worst, share)
            name = str(t.relative_to(TRACES)) if t.is_relative_to(TRACES) else str(t)
            print(
                f"{name[:58]:<58} {size / 1e6:8.2f} {added / 1e3:9.1f} {100 * share:6.2f}% {n:7d} {t1 - t0:9.2f} {t2 - t1:8.2f} {t3 - t2:6.2f}"
            )
            for p in Path(tmp).iterdir():
                p.unlink() if p.is_file() else shutil.rmtree(p)
    print(f"largest share added: {100 * worst:.2f}% of the trace (target: at most 10%)")


if __name__ == "__main__":
    main(sys.argv[1:])
