"""Write the JSON report of every recorded trace (tests/traces/ and the shared fixtures) into a folder.

Run it before and after a change to the report model, then compare the two folders with --against:
    PYTHONPATH=src python tools/dump_reports.py /tmp/before
    PYTHONPATH=src python tools/dump_reports.py /tmp/after --against /tmp/before
The comparison reports files whose bytes differ and, for those, whether the parsed values are equal.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [ROOT / "tests" / "traces", Path("/work/shared/fixtures/kineto_samples")]


def inputs() -> list[tuple[str, Path]]:
    out = []
    for base in SOURCES:
        if not base.is_dir():
            continue
        for p in sorted(base.rglob("*.pt.trace.json*")):
            out.append((f"{base.name}__{p.relative_to(base).as_posix().replace('/', '__')}", p))
    return out


def _text(path: Path) -> str:
    from idlehound.pipeline import analyze_path
    from idlehound.report import files

    doc = analyze_path(path.parent if (path.parent / "run.json").exists() else path).doc
    doc["trace"]["path"] = path.name  # the checkout's location is not part of what is compared
    return files._json(doc)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--against", type=Path, default=None)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    same = values = differ = 0
    for name, path in inputs():
        target = args.out / (name + ".json")
        try:
            target.write_text(_text(path), encoding="utf-8")
        except Exception as e:  # a trace the analysis refuses: recorded as its error line
            target.write_text(f"error: {type(e).__name__}: {e}\n", encoding="utf-8")
        if args.against is None:
            continue
        old = args.against / target.name
        if old.read_bytes() == target.read_bytes():
            same += 1
        elif not old.read_text().startswith("error") and json.loads(old.read_text()) == json.loads(target.read_text()):
            values += 1
            print(f"same values, other bytes: {name}")
        else:
            differ += 1
            print(f"DIFFERENT: {name}")
    if args.against is not None:
        print(f"{same} byte-identical, {values} equal in value only, {differ} different")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
