"""The analysis of a run folder depends only on the folder (issue 16, item 4).

The CLI and the Python API give byte-identical JSON; what the analysing machine has installed changes nothing;
source snippets come only from what capture stored in the folder.
"""

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import idlehound
from idlehound.analysis._source import snippet_at

from .conftest import ROOT, TRACES

SRC = ROOT / "src"
FOLDERS = sorted(
    p.name for p in TRACES.iterdir() if (p / "run.json").is_file()
)  # run folders, not bare traces


def cli_json(folder: Path, cwd: Path, pythonpath: str = str(SRC)) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "idlehound", "analyze", str(folder), "--json"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": pythonpath},
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def api_json(folder: Path) -> str:
    a = idlehound.analyze(idlehound.load_trace(folder))
    return json.dumps(idlehound.report_data(a, idlehound.diagnose(a)), indent=2) + "\n"


@pytest.mark.slow
@pytest.mark.parametrize("name", FOLDERS)
def test_cli_and_python_api_give_the_same_bytes(name):
    folder = TRACES / name
    api = api_json(folder)
    assert cli_json(folder, cwd=ROOT) == api
    doc = json.loads(api)
    if doc["findings"] and doc["findings"][0]["location"]:
        assert doc["findings"][0]["location"]["exact"]  # the API read the sidecar too


def test_cudnn_finding_comes_from_run_json_through_the_api_too():
    a = idlehound.analyze(idlehound.load_trace(TRACES / "cudnn_off"))
    assert [f.cause for f in idlehound.diagnose(a)][:1] == ["cudnn_benchmark"]


def fake_site(tmp_path: Path) -> Path:
    """Packages that shadow the recorded frames' roots: `tests` (the planted scripts) and `pynvml`."""
    site = tmp_path / "fake" / "lib" / "python3.99" / "site-packages"
    for rel in ("tests/__init__.py", "tests/scripts/__init__.py", "tests/scripts/planted/__init__.py"):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text("")
    for name in ("sync_item", "dataloader_bound", "host_python", "cudnn_off"):
        (site / "tests" / "scripts" / "planted" / f"{name}.py").write_text("x = 'installed, not the user'\n")
    (site / "pynvml.py").write_text("")
    (site / "train").mkdir()
    (site / "train" / "__init__.py").write_text("")
    return site


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sync_item", "dataloader_bound", "host_python", "cudnn_off", "demo"])
def test_other_installed_packages_change_nothing(tmp_path, name):
    site = fake_site(tmp_path)
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    plain = cli_json(TRACES / name, cwd=cwd)
    shadowed = cli_json(TRACES / name, cwd=cwd, pythonpath=os.pathsep.join([str(SRC), str(site)]))
    assert shadowed == plain
    assert '"exact": true' in plain  # the planted lines were found, so the roots were judged at all


def copy_folder(tmp_path: Path, name: str) -> tuple[Path, Path, dict]:
    dst = tmp_path / name
    shutil.copytree(TRACES / name, dst)
    side = next(dst.glob("*.sidecar.json.gz"))
    return dst, side, json.loads(gzip.decompress(side.read_bytes()))


def write(side: Path, doc: dict) -> None:
    side.write_bytes(gzip.compress(json.dumps(doc).encode()))


def test_snippets_come_only_from_the_folder(tmp_path):
    folder, side, doc = copy_folder(tmp_path, "sync_item")
    planted = "tests/scripts/planted/sync_item.py"
    stored = [f"stored line {n}" for n in range(10, 25)]
    doc.update(version=2, sources={planted: [[10, stored]]})
    write(side, doc)
    out = json.loads(api_json(folder))
    top = out["findings"][0]["location"]
    assert (top["file"], top["line"]) == (planted, 17)
    assert top["snippet"] == {"first_line": 14, "lines": [f"stored line {n}" for n in range(14, 21)]}
    real = (ROOT / planted).read_text().splitlines()
    assert not any(line in real for line in top["snippet"]["lines"])  # not read from the checkout
    for row in out["idle_by_line"]:
        if row["location"] and row["location"]["file"] == planted:
            assert (
                row["location"]["snippet"]["lines"][
                    row["location"]["line"] - row["location"]["snippet"]["first_line"]
                ]
                == f"stored line {row['location']['line']}"
            )


def test_without_stored_source_there_is_no_snippet(tmp_path):
    folder, side, doc = copy_folder(tmp_path, "sync_item")
    doc["sources"] = {"tests/scripts/planted/sync_item.py": "not a list", "other.py": [[1, [1, 2]]]}
    write(side, doc)  # malformed stored sources are ignored, never a crash
    out = json.loads(api_json(folder))
    assert all("snippet" not in f["location"] for f in out["findings"] if f["location"])


def test_recorded_decision_on_user_code_wins_over_the_path_rule(tmp_path):
    folder, side, doc = copy_folder(tmp_path, "sync_item")
    doc.update(version=2, files={"tests/scripts/planted/sync_item.py": False})
    write(side, doc)
    files = location_files(json.loads(api_json(folder)))
    assert "tests/scripts/planted/sync_item.py" in location_files(json.loads(api_json(TRACES / "sync_item")))
    assert "tests/scripts/planted/sync_item.py" not in files  # capture said it was a library


def location_files(doc: dict) -> set[str]:
    rows = doc["findings"] + doc["idle_by_line"] + doc["sync_points"]
    return {r["location"]["file"] for r in rows if r["location"]}


def test_snippet_window_is_clipped_to_what_was_stored():
    chunks = [(10, tuple(f"l{n}" for n in range(10, 14))), (40, ("a", "b"))]
    assert snippet_at(chunks, 11) == (10, ("l10", "l11", "l12", "l13"))
    assert snippet_at(chunks, 41) == (40, ("a", "b"))
    assert snippet_at(chunks, 20) is None and snippet_at(None, 11) is None


@pytest.mark.slow
def test_capture_records_user_files_and_their_lines(tmp_path, run_cli):
    pytest.importorskip("torch")
    script = ROOT / "tests" / "scripts" / "cpu" / "train_item.py"
    r = run_cli(
        "run",
        "--logdir",
        tmp_path,
        "--skip",
        "3",
        "--warmup",
        "1",
        "--active",
        "3",
        "--no-report",
        script,
        "12",
    )
    assert r.returncode == 0, r.stderr
    (side,) = tmp_path.glob("*/*.sidecar.json.gz")
    doc = json.loads(gzip.decompress(side.read_bytes()))
    user = {f for f, mine in doc["files"].items() if mine}
    assert user and all(f.endswith("train_item.py") for f in user)
    assert doc["files"]["torch/_tensor.py"] is False and "torch" in doc["library_roots"]
    (file,) = user
    lines = script.read_text().splitlines()
    chunks = {first: text for first, text in doc["sources"][file]}
    stored = {first + i: line for first, text in chunks.items() for i, line in enumerate(text)}
    assert stored[17] == lines[16] and "loss.item()" in stored[17]  # the exact line of the .item() call
    assert len(stored) < len(lines) + 1  # only the lines around referenced lines
    a = idlehound.analyze(idlehound.load_trace(side.parent))
    assert a.notes == [] or all("def lines" not in n for n in a.notes)


@pytest.mark.parametrize(
    "payload",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b"not json",
        b"[1, 2]",
        b'{"frames": "x", "files": [1], "sources": {"a": 5}, "library_roots": 7}',
    ],
)
def test_a_broken_sidecar_is_set_aside_with_a_note(tmp_path, payload):
    folder, side, _ = copy_folder(tmp_path, "sync_item")
    side.write_bytes(gzip.compress(payload))
    doc = json.loads(api_json(folder))
    top = doc["findings"][0]["location"]
    assert top["file"].endswith("sync_item.py") and not top["exact"]  # def lines, as for a bare trace
    if not payload.startswith(b"{"):
        assert any("not a readable capture sidecar" in n for n in doc["notes"])


@pytest.mark.slow
def test_captured_snippet_reaches_the_report_from_the_folder_alone(tmp_path, run_cli):
    pytest.importorskip("torch")
    script = ROOT / "tests" / "scripts" / "cpu" / "no_optimizer.py"
    r = run_cli(
        "run",
        "--logdir",
        tmp_path / "log",
        "--skip",
        "3",
        "--warmup",
        "1",
        "--active",
        "3",
        "--step-on",
        "dataloader",
        "--no-report",
        script,
    )
    assert r.returncode == 0, r.stderr
    (run_dir,) = (tmp_path / "log").iterdir()
    moved = shutil.move(str(run_dir), str(tmp_path / "elsewhere"))  # another place, another cwd: same report
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    out = cli_json(Path(moved), cwd=elsewhere)
    assert out == api_json(Path(moved))
    loc = json.loads(out)["dataloader"]["location"]
    assert (loc["line"], loc["exact"]) == (11, True)  # `for (x,) in loader:`
    lines = script.read_text().splitlines()
    snip = loc["snippet"]
    assert snip["lines"] == lines[snip["first_line"] - 1 : snip["first_line"] - 1 + len(snip["lines"])]
    assert snip["first_line"] <= 11 < snip["first_line"] + len(snip["lines"])
