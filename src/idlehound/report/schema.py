"""Write the JSON schema of every output document, generated from report/model.py, to docs/schema/.

    python -m idlehound.report.schema [FOLDER]    (default: docs/schema of this checkout)

tests/test_report_model.py checks the shipped files equal what this writes.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, get_args

import msgspec

from .model import DOCUMENTS, encode


def schema_id(name: str) -> str:
    """The `schema` value a document carries ("idlehound/analysis"), read from its Struct's Literal."""
    field = next(f for f in msgspec.structs.fields(DOCUMENTS[name]) if f.name == "schema")
    value: str = get_args(field.type)[0]
    return value


def schema(name: str) -> dict[str, Any]:
    """The JSON schema (draft 2020-12) of one document, named by its `schema` value."""
    out: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": schema_id(name),
    }
    out.update(msgspec.json.schema(DOCUMENTS[name]))
    return out


def schema_text(name: str) -> str:
    return encode(schema(name)) + "\n"


def write_all(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in DOCUMENTS:
        path = folder / f"{name}.schema.json"
        path.write_text(schema_text(name), encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else Path(__file__).resolve().parents[3] / "docs" / "schema"
    for path in write_all(folder):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
