"""Every IDLEHOUND_* environment variable idlehound reads, in one place: its name, what it does, its default and
how its value is checked (docs/environment.md lists them for users; a test holds the two together).

A value is read when it is needed, not at import, so a test or a parent process may set it at any time. A bad
value raises SettingError, which names the variable: the CLI checks them all before a command runs
(check_all) and prints that one line with exit code 2.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Generic, TypeVar

from .errors import SettingError

T = TypeVar("T")

_ON, _OFF = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One variable: `parse` turns its (stripped, non-empty) text into the value or raises ValueError saying
    what it must be; unset or empty gives `default`. `internal`: set by idlehound for its own child processes."""

    name: str
    parse: Callable[[str], T]
    default: T
    internal: bool = False

    def get(self) -> T:
        text = os.environ.get(self.name, "").strip()
        if not text:
            return self.default
        try:
            return self.parse(text)
        except (ValueError, OverflowError) as e:
            raise SettingError(self.name, f"{e}, not {text[:40]!r}") from None


def _flag(text: str) -> bool:
    if text.lower() in _ON:
        return True
    if text.lower() in _OFF:
        return False
    raise ValueError("must be 1 or 0")


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise ValueError("must be a whole number of 1 or more")
    return int(text)


def _bytes(text: str) -> int:
    """Bytes, written as an integer or a float: 4294967296, 4_294_967_296 or 4.3e9."""
    try:
        value = int(float(text.replace("_", "")))
    except (ValueError, OverflowError):
        value = 0
    if value <= 0:
        raise ValueError("must be a positive number of bytes")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:  # also refuses nan
        raise ValueError("must be a positive number")
    return value


def _text(text: str) -> str:
    return text


def _timestamp(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError("must be a time in seconds since the epoch") from None


# What each does, its values and defaults: docs/environment.md (a test holds that page and this list together).
DEBUG = Setting("IDLEHOUND_DEBUG", _flag, False)  # 1: an internal error shows its traceback (exit code 3)
JOBS = Setting("IDLEHOUND_JOBS", _positive_int, None)  # worker processes reading a trace (default: the cores)
NATIVE = Setting("IDLEHOUND_NATIVE", _flag, True)  # 0: decode the msgspec way, not with the C decoder
MAX_TRACE_BYTES = Setting("IDLEHOUND_MAX_TRACE_BYTES", _bytes, None)  # the largest JSON read (default 4 GiB)
MAX_GZIP_RATIO = Setting("IDLEHOUND_MAX_GZIP_RATIO", _positive_float, None)  # gzip bombs (default 200)
CACHE = Setting("IDLEHOUND_CACHE", _text, None)  # the data sets' folder (default ~/.cache/idlehound)
TUNE_COMPILE_BACKEND = Setting("IDLEHOUND_TUNE_COMPILE_BACKEND", _text, None)  # e.g. eager: no compiler
# set by tune for its own child processes
TUNE_SCRIPT_DIR = Setting("IDLEHOUND_TUNE_SCRIPT_DIR", _text, None, internal=True)  # the script's folder
TUNE_LAUNCHED = Setting("IDLEHOUND_TUNE_LAUNCHED", _timestamp, None, internal=True)  # time.time() at launch

ALL: tuple[Setting[Any], ...] = (
    DEBUG,
    JOBS,
    NATIVE,
    MAX_TRACE_BYTES,
    MAX_GZIP_RATIO,
    CACHE,
    TUNE_COMPILE_BACKEND,
    TUNE_SCRIPT_DIR,
    TUNE_LAUNCHED,
)


def check_all() -> None:
    """Read every variable once: SettingError, naming it, for the first bad value."""
    for setting in ALL:
        setting.get()


def cache_dir() -> Path:
    """Where data sets are written once and kept: $IDLEHOUND_CACHE, else ~/.cache/idlehound."""
    return Path(CACHE.get() or os.path.join(os.path.expanduser("~"), ".cache", "idlehound"))
