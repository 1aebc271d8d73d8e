"""Reading and parsing a file to lint: Python's own decoding rules, regular files only, bounded size and depth."""

from __future__ import annotations

import ast
import os
import stat
from importlib.util import decode_source
from pathlib import Path

from ..errors import IdlehoundError

MAX_BYTES = 8 * 1024 * 1024  # far above any hand-written training script; bounds memory and time


def read_source(path: Path, max_bytes: int = MAX_BYTES) -> str:
    """The decoded text of a .py file. Refuses FIFOs and devices before opening them (opening a FIFO blocks)."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise IdlehoundError(f"{path}: cannot read ({e.strerror or e})") from None
    if not stat.S_ISREG(st.st_mode):
        raise IdlehoundError(f"{path}: not a regular file (a FIFO, device or socket); lint reads only files")
    if st.st_size > max_bytes:
        raise IdlehoundError(
            f"{path}: too large to lint ({st.st_size / 1e6:.1f} MB > {max_bytes / 1e6:.0f} MB)"
        )
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as e:
        raise IdlehoundError(f"{path}: cannot read ({e.strerror or e})") from None
    if len(data) > max_bytes:  # grew since stat
        raise IdlehoundError(f"{path}: too large to lint (> {max_bytes / 1e6:.0f} MB)")
    try:
        # BOM and PEP 263 coding lines, as the interpreter reads them
        return decode_source(data)
    except SyntaxError as e:
        raise IdlehoundError(f"{path}: not valid Python ({e.msg})") from None
    except (UnicodeDecodeError, LookupError) as e:
        raise IdlehoundError(f"{path}: cannot decode as Python source ({e})") from None


def _null_byte(source: str) -> str:
    """Where the first NUL character is, as a problem to print ("" when there is none)."""
    at = source.find("\0")
    if at < 0:
        return ""
    return f"line {source.count(chr(10), 0, at) + 1}: a NUL byte (\\x00); Python source cannot hold one"


def parse_source(source: str, path: str) -> ast.Module:
    """ast.parse with one-line errors for what the interpreter itself cannot compile."""
    nul = _null_byte(source)
    if nul:  # the interpreter's own message gives no line ("line None") on 3.11-3.12
        raise IdlehoundError(f"{path}: not valid Python ({nul})")
    try:
        return ast.parse(source, filename=path)
    except SyntaxError as e:
        where = f"line {e.lineno}: " if e.lineno is not None else ""
        raise IdlehoundError(f"{path}: not valid Python ({where}{e.msg})") from None
    except (RecursionError, MemoryError):
        raise IdlehoundError(f"{path}: an expression is nested too deeply for Python to parse") from None
    except ValueError as e:  # null bytes (Python before 3.12)
        raise IdlehoundError(f"{path}: not valid Python ({_null_byte(source) or e})") from None


def python_files(root: Path) -> list[Path]:
    """The .py files under a folder, sorted; symlinked folders are not followed (no loops)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        out += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py")]
    return out
