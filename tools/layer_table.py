"""Write docs/architecture.md's layer table from LAYER_TABLE in tests/test_layers.py (the test that enforces it).

    python tools/layer_table.py          # rewrite the table in docs/architecture.md
    python tools/layer_table.py --check  # exit 1 if the committed table differs

The table stands between the two marker lines in the doc; everything else there is left as written.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
BEGIN = (
    "<!-- layer table: written by `python tools/layer_table.py` from LAYER_TABLE in tests/test_layers.py -->"
)
END = "<!-- end of layer table -->"


def _shown(unit: str, src: Path) -> str:
    """`runfolder/` for a package, `errors` for a module, `idlehound/__init__` for the package itself."""
    if unit == "__init__":
        return "`idlehound/__init__`"
    return f"`{unit}/`" if (src / "idlehound" / unit).is_dir() else f"`{unit}`"


def table(rows: list[tuple[str, tuple[str, ...], str]], src: Path) -> str:
    lines = ["| layer | modules | what it knows |", "|---|---|---|"]
    lines += [
        f"| {name} | {', '.join(_shown(u, src) for u in units)} | {what} |" for name, units, what in rows
    ]
    return "\n".join(lines)


def with_table(doc: str, rows: list[tuple[str, tuple[str, ...], str]], src: Path) -> str:
    """The doc with the text between its markers replaced by the table."""
    head, sep, rest = doc.partition(BEGIN + "\n")
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise ValueError(f"{DOC}: the layer table's marker lines are missing")
    return head + BEGIN + "\n" + table(rows, src) + "\n" + END + tail


def _layer_rows() -> list[tuple[str, tuple[str, ...], str]]:
    spec = importlib.util.spec_from_file_location("test_layers", ROOT / "tests" / "test_layers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LAYER_TABLE


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the committed table differs")
    args = ap.parse_args()
    doc = DOC.read_text(encoding="utf-8")
    new = with_table(doc, _layer_rows(), ROOT / "src")
    if args.check:
        if new != doc:
            print(
                f"{DOC}: the layer table differs from tests/test_layers.py; run python tools/layer_table.py"
            )
            return 1
        return 0
    DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
