"""Issue 33's rule for restructuring: every report document of the recorded traces under tests/traces, with its
terminal, markdown and HTML renderings and the compare and ranks documents made from them, keeps its bytes.

tests/traces/documents.sha256 holds their SHA-256, written by `python tools/dump_reports.py --write-hashes`.
A change that is meant to move a printed figure rewrites it, and its commit names the documents and why; any
other difference is a regression of a refactor."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _dump_reports():
    spec = importlib.util.spec_from_file_location("dump_reports", ROOT / "tools" / "dump_reports.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_every_recorded_document_and_rendering_keeps_its_bytes():
    tool = _dump_reports()
    recorded = dict(line.split("  ", 1)[::-1] for line in tool.HASHES.read_text().splitlines())
    recorded = {name.strip(): h for name, h in recorded.items()}
    now = tool.hashes()
    assert sorted(now) == sorted(recorded), "documents added or gone: rewrite the hashes with the tool"
    changed = sorted(name for name, h in now.items() if recorded[name] != h)
    assert not changed, f"{len(changed)} of {len(now)} documents changed: {changed[:10]}"
    assert len(now) > 100  # the recorded traces, each as JSON, terminal, markdown and HTML
