"""CONTRIBUTING.md's recipe "a trace format", followed literally with a made-up format: the loader routes a file
to the reader registered for it, the analysis runs on the table that reader builds, and its bad input is one line
and exit code 2. Without the registration the same file gets Kineto JSON's message, as before the seam."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

import idlehound
from idlehound import TraceError
from idlehound.cli import main
from idlehound.trace import Trace, _load, load_trace
from idlehound.trace._decode import Event
from idlehound.trace._table import TableBuilder

RECORDED = next(Path(__file__).parent.glob("traces/sync_item/*.pt.trace.json.gz"))
MAGIC = b"IDLEHOUND-EVENTS 1\n"


# Step 1 of the recipe: a reader (here in the test; a real one is a module of src/idlehound/trace/).
class EventLines:
    """A made-up format: the line MAGIC, a JSON line of the trace's metadata and device properties, then one
    JSON event (Chrome trace-event fields, times in µs) per line."""

    name = "idlehound event lines"

    def can_read(self, path: Path, head: bytes) -> bool:
        return head.startswith(MAGIC)

    def read(self, path: Path, max_bytes: int) -> Trace:
        data = path.read_bytes()[: max_bytes + 1]
        if len(data) > max_bytes:
            raise TraceError(path, f"larger than {max_bytes} bytes")
        lines = data.split(b"\n")
        try:
            header = json.loads(lines[1])
            events = [_EVENT(line) for line in lines[2:] if line.strip()]
        except (ValueError, msgspec.DecodeError, IndexError) as e:
            raise TraceError(path, f"not an event-lines file ({e})") from None
        builder = TableBuilder()
        builder.add(events)
        trace = Trace(path, builder.build(), size_bytes=len(data))
        trace.metadata, trace.device_properties = header["metadata"], header["deviceProperties"]
        return trace


_EVENT = msgspec.json.Decoder(Event).decode


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> EventLines:
    """Step 2 of the recipe: an instance added to READERS in trace/_load.py."""
    reader = EventLines()
    monkeypatch.setattr(_load, "READERS", (*_load.READERS, reader))
    return reader


def _event_lines(tmp_path: Path) -> Path:
    """The recorded trace's events and metadata, written in the made-up format."""
    doc = json.loads(gzip.decompress(RECORDED.read_bytes()))
    kineto = load_trace(RECORDED)
    header = {"metadata": kineto.metadata, "deviceProperties": kineto.device_properties}
    out = tmp_path / "sync_item.events"
    lines = [MAGIC, json.dumps(header).encode() + b"\n"]
    lines += [json.dumps(e).encode() + b"\n" for e in doc["traceEvents"]]
    out.write_bytes(b"".join(lines))
    return out


# Step 3 of the recipe: the analysis on the new reader's table, and its bad input.
def test_the_loader_routes_to_the_registered_reader(registered: EventLines, tmp_path: Path) -> None:
    path = _event_lines(tmp_path)
    assert _load.reader_for(path) is registered
    assert isinstance(_load.reader_for(RECORDED), type(_load.FALLBACK))  # gzip JSON stays Kineto's


def test_the_analysis_runs_on_the_new_readers_table(registered: EventLines, tmp_path: Path) -> None:
    ours = idlehound.analyze(load_trace(_event_lines(tmp_path)))
    alone = tmp_path / RECORDED.name  # without the run folder's sidecar and run.json, as the other file is
    alone.write_bytes(RECORDED.read_bytes())
    kineto = idlehound.analyze(load_trace(alone))
    assert ours.findings and ours.findings[0].cause == "sync"  # the planted .item() (tests/scripts/planted)
    assert ours.findings[0].location == kineto.findings[0].location
    # The whole document, but for what describes the file itself (its path, its size)
    assert {k: v for k, v in ours.doc.items() if k != "trace"} == {
        k: v for k, v in kineto.doc.items() if k != "trace"
    }


def test_bad_input_of_the_new_format_is_one_line_and_exit_2(registered: EventLines, tmp_path: Path) -> None:
    path = tmp_path / "broken.events"
    path.write_bytes(MAGIC + b'{"metadata": {}, "deviceProperties": []}\n{"ph": "X", "ts": \n')
    with pytest.raises(TraceError, match="not an event-lines file"):
        load_trace(path)
    r = CliRunner().invoke(main, ["analyze", str(path)])
    assert r.exit_code == 2, r.output
    assert "broken.events" in r.output and "not an event-lines file" in r.output
    assert "Traceback" not in r.output


def test_unregistered_the_file_gets_kinetos_message_as_before(tmp_path: Path) -> None:
    path = _event_lines(tmp_path)
    assert _load.reader_for(path) is _load.FALLBACK
    with pytest.raises(TraceError, match="invalid or truncated JSON"):
        load_trace(path)
