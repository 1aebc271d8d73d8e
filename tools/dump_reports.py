"""Write the JSON report of every recorded trace (tests/traces/ and the shared fixtures) into a folder, with
the compare, ranks (two recorded traces as two ranks) and lint documents made from them.

Run it before and after a change to the report model, then compare the two folders with --against:
    PYTHONPATH=src python tools/dump_reports.py /tmp/before
    PYTHONPATH=src python tools/dump_reports.py /tmp/after --against /tmp/before
With --renderings it also writes the terminal summary, markdown and HTML of each trace.
The comparison reports files whose bytes differ and, for those, whether the parsed values are equal.

    PYTHONPATH=src python tools/dump_reports.py --write-hashes
writes tests/traces/documents.sha256: the SHA-256 of every document and rendering of the recorded traces under
tests/traces (not the shared fixtures, not lint's), which tests/test_documents_unchanged.py recomputes. Run it
only when a change of a printed figure is meant, and say which documents changed and why in the commit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "tests" / "traces"
SOURCES = [TRACES, Path("/work/shared/fixtures/kineto_samples")]
HASHES = TRACES / "documents.sha256"


def inputs(sources: list[Path] = SOURCES) -> list[tuple[str, Path]]:
    out = []
    for base in sources:
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


def _others(lint: bool = True) -> dict[str, str]:
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
        if not lint:
            return texts
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
    # the trace's own path; paths recorded in run.json are data and stay
    return {k: v.replace(str(target), "TARGET") for k, v in texts.items()}


def documents(sources: list[Path] = SOURCES, renderings: bool = True, lint: bool = True) -> dict[str, str]:
    """Every document (and with renderings, terminal/markdown/HTML) by file name; an error as its line."""
    jobs: list[tuple[str, Callable[[], str]]] = [
        (n + ".json", lambda p=p: _text(p)) for n, p in inputs(sources)
    ]
    jobs += [(n + ".json", lambda t=t: t) for n, t in _others(lint).items()]
    out = {}
    for name, make in jobs:
        try:
            out[name] = make()
        except Exception as e:  # a trace the analysis refuses: recorded as its error line
            out[name] = f"error: {type(e).__name__}: {e}\n"
    if renderings:
        for name, path in inputs(sources):
            out.update(_renderings(name, path))
    return out


def hashes() -> dict[str, str]:
    """SHA-256 of each document and rendering of tests/traces (what tests/test_documents_unchanged.py checks)."""
    docs = documents([TRACES], renderings=True, lint=False)
    return {name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in sorted(docs.items())}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path, nargs="?")
    ap.add_argument("--against", type=Path, default=None)
    ap.add_argument(
        "--renderings", action="store_true", help="also the terminal summary, markdown and HTML of each trace"
    )
    ap.add_argument("--write-hashes", action="store_true", help=f"write {HASHES.relative_to(ROOT)} and stop")
    args = ap.parse_args()
    if args.write_hashes:
        HASHES.write_text("".join(f"{h}  {n}\n" for n, h in hashes().items()), encoding="utf-8")
        return 0
    if args.out is None:
        ap.error("an output folder is needed (or --write-hashes)")
    args.out.mkdir(parents=True, exist_ok=True)
    same = values = differ = new = 0
    for name, text in documents(renderings=args.renderings).items():
        target = args.out / name
        target.write_text(text, encoding="utf-8")
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
