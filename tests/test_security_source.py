"""A trace is data: frame names never import a module, never choose a file to read (issue 14, items 1 and 2).

Crafted traces name modules that would run code if imported (`evilmod` beside the trace, the stdlib's `this`),
files with secrets (/etc/passwd, a canary file), and device files that never end (/dev/zero) or block
(/dev/stdin). Analysis must report them as plain strings and read none of them.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from idlehound._paths import KNOWN_LIBRARIES, STDLIB_MODULES, UserCode, is_user_file

from .conftest import ROOT
from .unit.tracebuilder import TraceBuilder

SRC = ROOT / "src"
CANARY = "CANARY_SECRET_7f3a"
MARKER = "MARKER_EVILMOD_RAN"
HOSTILE = [
    "evilmod.x/train.py(3): f",
    "this.x/a.py(1): g",
    "/etc/passwd(1): h",
    "/dev/zero(1): z",
    "/dev/stdin(1): s",
]


def crafted(names: list[str]) -> bytes:
    """Each name is a user frame around a .item() that drains the GPU, so each becomes a report location."""
    tb = TraceBuilder()
    seg = 2000
    for i in range(3):
        t0 = i * seg * len(names)
        tb.step(i, ts=t0, dur=seg * len(names))
        for j, name in enumerate(names):
            s0 = t0 + j * seg
            frame = tb.python(name, s0, seg - 10)
            ext = tb.op("aten::mm", s0, 50)
            tb.kernel("gemm_bf16", ts=s0 + 60, dur=1000, launch_ts=s0 + 10, ext=ext)
            item = tb.op("aten::_local_scalar_dense", s0 + 100, 970)
            tb.python("<built-in method item of Tensor object at 0x7f00>", s0 + 99, 972, parent=frame)
            tb.runtime("cudaStreamSynchronize", s0 + 120, 945, ext=item)
            tb.op("aten::add", s0 + 1100, 800)
            ext2 = tb.op("aten::relu", s0 + 1900, 50)
            tb.kernel("relu", ts=s0 + 1960, dur=30, launch_ts=s0 + 1910, ext=ext2)
    return tb.to_bytes()


def hostile_folder(tmp_path: Path, names: list[str]) -> Path:
    """A folder with the trace, an importable `evilmod.py` that leaves a marker, and a canary source file."""
    d = tmp_path / "hostile"
    d.mkdir()
    (d / "evilmod.py").write_text(f"open({MARKER!r}, 'w').write('ran')\nprint({MARKER!r})\n")
    (d / "canary.py").write_text(f"first = 1\nsecret = {CANARY!r}\nlast = 3\n")
    (d / "t.pt.trace.json").write_bytes(crafted([n.replace("{canary}", str(d / "canary.py")) for n in names]))
    return d


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run with stdin an open, empty pipe: a read of /dev/stdin would block until the timeout."""
    r_fd, w_fd = os.pipe()
    try:
        return subprocess.run(
            [sys.executable, *args],
            cwd=cwd,
            stdin=r_fd,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(SRC)},
        )
    finally:
        os.close(r_fd)
        os.close(w_fd)


def locations(doc: dict) -> list[dict]:
    out = [f["location"] for f in doc["findings"] if f["location"]]
    out += [r["location"] for r in doc["idle_by_line"] if r["location"]]
    out += [s["location"] for s in doc["sync_points"] if s["location"]]
    return out


def first_passwd_line() -> str:
    try:
        return Path("/etc/passwd").read_text().splitlines()[0]
    except (OSError, IndexError):
        return "root:x:0:0"


@pytest.mark.slow  # starts an `idlehound analyze` process
def test_cli_imports_nothing_a_trace_names_and_reads_none_of_its_files(tmp_path):
    d = hostile_folder(tmp_path, [*HOSTILE, "{canary}(2): c"])
    r = run(["-m", "idlehound", "analyze", "t.pt.trace.json", "--json", "-o", "report.md"], cwd=d)
    assert r.returncode == 0, r.stderr
    assert not (d / MARKER).exists() and MARKER not in r.stdout + r.stderr  # evilmod.py never ran
    assert "Beautiful is better than ugly" not in r.stdout + r.stderr  # `this` was never imported
    doc = json.loads(r.stdout)
    files = {loc["file"] for loc in locations(doc)}
    assert {
        "evilmod.x/train.py",
        "this.x/a.py",
        "/etc/passwd",
        "/dev/zero",
        "/dev/stdin",
        str(d / "canary.py"),
    } <= files  # every name reached the report, as a string
    assert all("snippet" not in loc and "path" not in loc for loc in locations(doc))
    for text in (r.stdout, (d / "report.md").read_text()):
        assert CANARY not in text and first_passwd_line() not in text


@pytest.mark.slow  # starts a fresh Python process
def test_api_leaves_sys_modules_without_the_named_modules(tmp_path):
    d = hostile_folder(tmp_path, HOSTILE)
    code = (
        "import json, sys, idlehound\n"
        "a = idlehound.analyze(idlehound.load_trace('t.pt.trace.json'))\n"
        "doc = idlehound.report_data(a, idlehound.diagnose(a))\n"
        "print(json.dumps({m: m in sys.modules for m in ('this', 'evilmod', 'evilmod.x')}))\n"
    )
    r = run(["-c", code], cwd=d)  # `python -c` puts the folder first on sys.path: evilmod is importable
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[-1]) == {"this": False, "evilmod": False, "evilmod.x": False}
    assert not (d / MARKER).exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["/dev/zero(1): z", "/dev/stdin(1): s", "/etc/passwd(1): h", "{canary}(2): c"]
)
def test_a_file_named_by_the_trace_is_a_string_in_json_and_markdown(tmp_path, name):
    d = hostile_folder(tmp_path, [name])
    r = run(["-m", "idlehound", "analyze", "t.pt.trace.json", "--json", "-o", "report.md"], cwd=d)
    assert r.returncode == 0, r.stderr  # /dev/stdin did not block, /dev/zero did not fill memory
    doc = json.loads(r.stdout)
    top = doc["findings"][0]["location"]
    assert top["file"] == name.split("(")[0].replace("{canary}", str(d / "canary.py"))
    assert "snippet" not in top and "path" not in top  # nothing resolved or read on this machine
    for text in (r.stdout, (d / "report.md").read_text()):
        assert CANARY not in text and first_passwd_line() not in text


@pytest.mark.slow
@pytest.mark.parametrize("name", ["/etc/passwd(1): h", "{canary}(2): c"])
def test_a_file_named_by_the_trace_is_not_read_into_the_html(tmp_path, name):
    d = hostile_folder(tmp_path, [name])
    r = run(["-m", "idlehound", "analyze", "t.pt.trace.json", "-o", "report.html"], cwd=d)
    assert r.returncode == 0, r.stderr
    html = (d / "report.html").read_text()
    assert CANARY not in html and first_passwd_line() not in html


@pytest.mark.parametrize(
    "path,user",
    [
        ("train.py", True),
        ("tests/scripts/planted/sync_item.py", True),
        ("/home/u/proj/train.py", True),
        ("evilmod.x/train.py", True),
        ("this.x/a.py", True),
        ("/etc/passwd", True),
        ("/home/u/lib/python_x/a.py", True),
        ("torch/nn/modules/module.py", False),
        ("transformers/trainer.py", False),
        ("lightning/pytorch/x.py", False),
        ("pytorch_lightning/trainer/trainer.py", False),
        ("accelerate/accelerator.py", False),
        ("timm/x.py", False),
        ("numpy/core/x.py", False),
        ("tqdm/std.py", False),
        ("json/decoder.py", False),
        ("threading.py", False),
        ("distutils/core.py", False),
        ("this.py", False),
        ("<frozen runpy>", False),
        ("<string>", False),
        ("", False),
        ("/usr/lib/python3.12/json/decoder.py", False),
        ("/opt/venv/lib/python3.11/site-packages/torch/x.py", False),
        ("/usr/lib/python3/dist-packages/numpy/x.py", False),
        ("C:\\venv\\Lib\\site-packages\\torch\\x.py", False),
        ("/tmp/torchinductor_root/ab/cab.py", False),
        ("idlehound/capture/_api.py", False),
        ("idlehound/workloads/resnet.py", True),
        ("/site/lib/python3.12/site-packages/idlehound/demo.py", True),
    ],
)
def test_user_code_is_decided_by_the_path_string_alone(path, user):
    assert is_user_file(path) is user


def test_shipped_stdlib_list_covers_this_python():
    names = getattr(sys, "stdlib_module_names", None)
    if names is None:
        pytest.skip("Python < 3.10 has no sys.stdlib_module_names")
    assert set(names) <= STDLIB_MODULES
    assert {"torch", "transformers", "lightning", "numpy"} <= KNOWN_LIBRARIES


def test_capture_record_overrides_the_path_rule():
    code = UserCode(
        {"mycorp/utils.py": False, "json/mine.py": True},
        library_roots=["corp"],
        library_prefixes=["/opt/corp/"],
    )
    assert code("mycorp/utils.py") is False and is_user_file("mycorp/utils.py")
    assert code("json/mine.py") is True
    assert code("corp/x.py") is False and code("corpx/x.py") is True
    assert code("/opt/corp/a.py") is False and code("/opt/corpus/a.py") is True
    assert code("torch/x.py") is False  # never recorded: the path rule still applies


def test_analysis_code_holds_no_module_lookups():
    """The parts that read traces never import by name or look modules up (capture, which runs in the user's
    own process, may)."""
    pkg = SRC / "idlehound"
    files = [
        pkg / "_paths.py",
        pkg / "pipeline.py",
        *(pkg / "analysis").glob("*.py"),
        *(pkg / "diagnose").glob("*.py"),
        *(pkg / "report").glob("*.py"),
        *(pkg / "trace").glob("*.py"),
    ]
    for f in files:
        text = f.read_text()
        if (
            f == pkg / "report" / "__init__.py"
        ):  # loads its own renderer modules from a fixed table, never a name
            assert text.count("import_module(") == 1  # from data: that one call, with this package's own name
            text = text.replace("from importlib import import_module", "")
            text = text.replace('import_module(f"{__name__}.{module}")', "")
        for word in ("importlib", "find_spec", "sys.modules", "__import__", "import_module"):
            assert word not in text, f"{f.relative_to(SRC)} uses {word}"
