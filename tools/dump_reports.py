"""Write the JSON report of every recorded trace (tests/traces/ and the shared fixtures) into a folder, with
the compare, ranks (two recorded traces as two ranks) and lint documents made from them.

Run it before and after a change to the report model, then compare the two folders with --against:
    PYTHONPATH=src python tools/dump_reports.py /tmp/before
    PYTHONPATH=src python tools/dump_reports.py /tmp/after --against /tmp/before
With --renderings it also writes the terminal summary, markdown and HTML of each trace.
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
    from idlehound.report import encode

    doc = analyze_path(path.parent if (path.parent / "run.json").exists() else path).doc
    doc["trace"]["path"] = path.name  # the checkout's location is not part of what is compared
    return encode(doc)


def _others(out: Path) -> dict[str, str]:
    """compare, ranks and lint documents from recorded data, as the CLI writes them."""
    import gzip
    import shutil
    import tempfile

    from click.testing import CliRunner

    from idlehound import cli

    traces = ROOT / "tests" / "traces"
    pairs = [("healthy", "dataloader_bound"), ("sync_item", "item_gpu_bound"), ("demo", "pageable")]
    texts = {}
    runner = CliRunner()
    for a, b in pairs:
        r = runner.invoke(cli.main, ["compare", "--json", str(traces / a), str(traces / b)])
        texts[f"compare__{a}__{b}"] = r.output.replace(str(traces), "TRACES")
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(["sync_item", "healthy", "launch_bound"]):
            src = next((traces / name).glob("*.pt.trace.json.gz"))
            d = json.loads(gzip.decompress(src.read_bytes()))
            d["distributedInfo"] = {"backend": "nccl", "rank": i, "world_size": 3}
            (Path(tmp) / f"rank{i}_host.1.pt.trace.json.gz").write_bytes(
                gzip.compress(json.dumps(d).encode())
            )
        r = runner.invoke(cli.main, ["analyze", "--ranks", "--json", tmp])
        texts["ranks__three"] = r.output.replace(tmp, "RANKS")
        lint_dir = Path(tmp) / "lint"
        shutil.copytree(ROOT / "tests" / "scripts", lint_dir)
        r = runner.invoke(cli.main, ["lint", "--json", str(lint_dir), "--trace", str(traces / "sync_item")])
        texts["lint__scripts"] = r.output.replace(str(lint_dir), "LINT").replace(str(traces), "TRACES")
    return texts


def _renderings(name: str, path: Path) -> dict[str, str]:
    """The terminal summary, markdown and HTML the CLI makes of one recorded trace (issue 33: the renderers
    must say the same after the report model changes)."""
    import tempfile

    from click.testing import CliRunner

    from idlehound import cli

    target = path.parent if (path.parent / "run.json").exists() else path
    runner = CliRunner()
    texts = {f"{name}.txt": runner.invoke(cli.main, ["analyze", str(target)]).output}
    with tempfile.TemporaryDirectory() as tmp:
        for ext in ("md", "html"):
            out = Path(tmp) / f"report.{ext}"
            r = runner.invoke(cli.main, ["analyze", str(target), "-o", str(out)])
            texts[f"{name}.{ext}"] = out.read_text(encoding="utf-8") if out.exists() else f"error: {r.output}"
    return {k: v.replace(str(target), "TARGET").replace(str(ROOT), "ROOT") for k, v in texts.items()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--against", type=Path, default=None)
    ap.add_argument(
        "--renderings", action="store_true", help="also the terminal summary, markdown and HTML of each trace"
    )
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    same = values = differ = new = 0
    jobs = [(name, lambda p=path: _text(p)) for name, path in inputs()]
    others = _others(args.out)
    jobs += [(name, lambda t=text: t) for name, text in others.items()]
    jobs = [(name + ".json", make) for name, make in jobs]
    if args.renderings:
        for name, path in inputs():
            for rname, text in _renderings(name, path).items():
                jobs.append((rname, lambda t=text: t))
    for name, make in jobs:
        target = args.out / name
        try:
            target.write_text(make(), encoding="utf-8")
        except Exception as e:  # a trace the analysis refuses: recorded as its error line
            target.write_text(f"error: {type(e).__name__}: {e}\n", encoding="utf-8")
        if args.against is None:
            continue
        old = args.against / target.name
        if not old.exists():  # a trace recorded after the reference dump
            new += 1
            print(f"new: {name}")
        elif old.read_bytes() == target.read_bytes():
            same += 1
        elif (
            name.endswith(".json")
            and not old.read_text().startswith("error")
            and json.loads(old.read_text()) == json.loads(target.read_text())
        ):
            values += 1
            print(f"same values, other bytes: {name}")
        else:
            differ += 1
            print(f"DIFFERENT: {name}")
    if args.against is not None:
        print(f"{same} byte-identical, {values} equal in value only, {differ} different, {new} new")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
