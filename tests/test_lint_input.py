"""lint on awkward input: FIFOs and devices, coding lines and BOMs, deep nesting, huge files."""

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from idlehound.errors import IdlehoundError
from idlehound.lint import lint_paths
from idlehound.lint._source import read_source

pytestmark = pytest.mark.slow  # `idlehound lint` in a process per input, and a hypothesis search

TRAP = (
    "import torch\nmodel = torch.nn.Linear(2, 1).cuda()\nopt = torch.optim.SGD(model.parameters())\n"
    "for x in [torch.ones(2)]:\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n"
    "    print(loss.item())\n"
)


def one_line_error(r, *words):
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in r.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_is_refused_without_opening_it(run_cli, tmp_path):
    fifo = tmp_path / "train.py"
    os.mkfifo(fifo)
    # timeout only guards against the old hang (opening a FIFO blocks until a writer comes)
    one_line_error(run_cli("lint", fifo, timeout=60), str(fifo), "not a regular file")
    one_line_error(run_cli("lint", tmp_path, timeout=60), "not a regular file")


@pytest.mark.parametrize("device", ["/dev/null", "/dev/zero", "/dev/stdin"])
def test_devices_are_refused(run_cli, device):
    if not os.path.exists(device):
        pytest.skip(f"{device} absent")
    one_line_error(run_cli("lint", device, timeout=60), device, "not a regular file")


def test_latin1_coding_line(run_cli, tmp_path):
    f = tmp_path / "latin.py"
    f.write_bytes(
        b"# -*- coding: latin-1 -*-\n# caf\xe9 na\xefve\n"
        + TRAP.replace("print(loss.item())", "print('r\xe9sum\xe9', loss.item())").encode("latin-1")
    )
    found = lint_paths([f])
    assert [(x.rule, x.line) for x in found] == [("IH001", 10)]
    assert "résumé" in found[0].text
    assert run_cli("lint", f).returncode == 1


def test_utf8_bom(run_cli, tmp_path):
    f = tmp_path / "bom.py"
    f.write_bytes(b"\xef\xbb\xbf" + TRAP.encode())
    assert [(x.rule, x.line) for x in lint_paths([f])] == [("IH001", 8)]
    assert run_cli("lint", f).returncode == 1


@pytest.mark.parametrize(
    "data, words",
    [
        (b"# coding: no-such-codec\nx = 1\n", ["bad.py", "no-such-codec"]),
        (b"x = '\xff\xfe'\n", ["bad.py", "encoding"]),
        (b"x = 1\x00\n", ["bad.py", "not valid Python"]),
    ],
)
def test_undecodable_source_is_one_line(run_cli, tmp_path, data, words):
    f = tmp_path / "bad.py"
    f.write_bytes(data)
    one_line_error(run_cli("lint", f), *words)


def test_expression_too_deep_for_python_is_one_line(run_cli, tmp_path):
    f = tmp_path / "deep.py"
    f.write_text("x = " + "1+" * 100_000 + "1\n")
    one_line_error(run_cli("lint", f), str(f), "nested too deeply")
    f.write_text("x = " + "(" * 1000 + "1" + ")" * 1000 + "\n")
    one_line_error(run_cli("lint", f), str(f), "not valid Python")


def test_deep_but_valid_expression_is_linted(tmp_path):
    """Nesting Python compiles (a few thousand levels) gets a result, not a RecursionError."""
    depth = 2000
    src = "x = " + "1+" * depth + "1\n" + "y = " + "-" * 900 + "1\n" + TRAP
    compile(src, "deep.py", "exec")  # valid for the interpreter itself
    f = tmp_path / "deep_ok.py"
    f.write_text(src)
    before = sys.getrecursionlimit()
    assert [(x.rule, x.line) for x in lint_paths([f])] == [("IH001", 10)]
    assert sys.getrecursionlimit() == before


def test_size_bound(tmp_path):
    f = tmp_path / "big.py"
    f.write_text("x = 1\n" * 100)
    with pytest.raises(IdlehoundError, match="too large"):
        read_source(f, max_bytes=100)
    assert read_source(f, max_bytes=10_000).count("\n") == 100


CORPUS = sorted((Path(__file__).parent / "scripts" / "lint" / "corpus").glob("*.py"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_mutated_scripts_give_findings_or_a_clean_error(tmp_path, data):
    """Lines cut, repeated or shuffled out of real loops: a result or an IdlehoundError, never a crash."""
    lines = data.draw(st.sampled_from(CORPUS)).read_text().splitlines()
    ops = data.draw(
        st.lists(
            st.tuples(
                st.sampled_from(["cut", "dup", "swap", "dedent"]),
                st.integers(0, len(lines) - 1),
                st.integers(0, len(lines) - 1),
            ),
            max_size=6,
        )
    )
    for op, i, j in ops:
        i, j = i % len(lines), j % len(lines)
        if op == "cut":
            del lines[min(i, j) : max(i, j) + 1]
        elif op == "dup":
            lines[i:i] = lines[i : j + 1]
        elif op == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        else:
            lines[i] = lines[i].lstrip()
        if not lines:
            lines = ["pass"]
    f = tmp_path / "mutated.py"
    f.write_text("\n".join(lines) + "\n")
    try:
        found = lint_paths([f])
    except IdlehoundError as e:
        assert str(e).startswith(str(f)) and "\n" not in str(e)
    else:
        assert all(1 <= x.line <= len(lines) for x in found)
