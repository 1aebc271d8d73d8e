"""The renderings tools/dump_reports.py leaves out, made from recorded data, to compare before and after a change.

    PYTHONPATH=src python tools/dump_other_renderings.py OUT [--against OLD_OUT]

compare (terminal, markdown, HTML) of four recorded pairs, ranks (terminal, HTML) of three recorded traces as
ranks, lint (text, github, sarif, json) of tests/scripts with --trace sync_item, tune (terminal, markdown, HTML)
of docs/measurements/tune-h200-{a,b}.json and test_tune_predict's version-3 document, ladder (terminal, markdown,
HTML) of docs/measurements/ladder-h200.json. Paths of this checkout and temporary folders are replaced by names.
Issue 33 used it to show these renderings unchanged by the typed documents (30 files).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "tests" / "traces"
PAIRS = [
    ("healthy", "dataloader_bound"),
    ("sync_item", "item_gpu_bound"),
    ("demo", "pageable"),
    ("dataloader_bound", "dataloader_workers"),
]


def _cli(args: list[object]) -> str:
    from click.testing import CliRunner

    from idlehound import cli

    return CliRunner().invoke(cli.main, [str(a) for a in args]).output


def _compare(put) -> None:  # type: ignore[no-untyped-def]
    for a, b in PAIRS:
        with tempfile.TemporaryDirectory() as tmp:
            put(f"compare_{a}_{b}.txt", _cli(["compare", TRACES / a, TRACES / b]))
            for ext in ("md", "html"):
                out = Path(tmp) / f"c.{ext}"
                _cli(["compare", TRACES / a, TRACES / b, "-o", out])
                put(f"compare_{a}_{b}.{ext}", out.read_text(encoding="utf-8"))


def _ranks_and_lint(put) -> None:  # type: ignore[no-untyped-def]
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(["sync_item", "healthy", "launch_bound"]):
            d = json.loads(gzip.decompress(next((TRACES / name).glob("*.pt.trace.json.gz")).read_bytes()))
            d["distributedInfo"] = {"backend": "nccl", "rank": i, "world_size": 3}
            (Path(tmp) / f"rank{i}_host.1.pt.trace.json.gz").write_bytes(
                gzip.compress(json.dumps(d).encode())
            )
        put("ranks.txt", _cli(["analyze", "--ranks", tmp]).replace(tmp, "RANKS"))
        _cli(["analyze", "--ranks", tmp, "-o", Path(tmp) / "r.html"])
        put("ranks.html", (Path(tmp) / "r.html").read_text(encoding="utf-8").replace(tmp, "RANKS"))
        lint = Path(tmp) / "lint"
        shutil.copytree(ROOT / "tests" / "scripts", lint)
        for fmt in ("text", "github", "sarif", "json"):
            out = _cli(["lint", "--format", fmt, lint, "--trace", TRACES / "sync_item"])
            put(f"lint.{fmt}", out.replace(str(lint), "LINT"))


def _tune_and_ladder(put) -> None:  # type: ignore[no-untyped-def]
    from rich.console import Console

    from idlehound.report import ladder_markdown, render_ladder, render_ladder_html

    try:
        from idlehound.report.tune import render_tune, tune_html, tune_markdown
    except ImportError:  # before issue 33 tune rendered itself
        from idlehound.tune.report import render_tune, tune_html, tune_markdown  # type: ignore[no-redef]

    measured = ROOT / "docs" / "measurements"
    docs = {n: json.loads((measured / f"{n}.json").read_text()) for n in ("tune-h200-a", "tune-h200-b")}
    sys.path.insert(0, str(ROOT))
    import tests.test_tune_predict as predict

    with tempfile.TemporaryDirectory() as tmp:
        docs["tune-v3"] = json.loads(json.dumps(predict._doc(Path(tmp))))
    for n, d in docs.items():
        c = Console(record=True, width=120, file=io.StringIO())
        render_tune(d, c)
        put(f"{n}.txt", c.export_text())
        put(f"{n}.md", tune_markdown(d))
        put(f"{n}.html", tune_html(d))
    ladder = json.loads((measured / "ladder-h200.json").read_text())
    c = Console(record=True, width=120, file=io.StringIO())
    render_ladder(ladder, c)
    put("ladder.txt", c.export_text())
    put("ladder.md", ladder_markdown(ladder))
    put("ladder.html", render_ladder_html(ladder))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--against", type=Path, default=None)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    def put(name: str, text: str) -> None:
        text = text.replace(str(TRACES), "TRACES").replace(str(ROOT), "ROOT")
        (args.out / name).write_text(text, encoding="utf-8")

    _compare(put)
    _ranks_and_lint(put)
    _tune_and_ladder(put)
    written = sorted(args.out.iterdir())
    if args.against is None:
        print(f"{len(written)} files in {args.out}")
        return 0
    differ = [p.name for p in written if (args.against / p.name).read_bytes() != p.read_bytes()]
    for name in differ:
        print(f"DIFFERENT: {name}")
    print(f"{len(written) - len(differ)} byte-identical, {len(differ)} different")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
