"""Typed errors. Every user-facing failure is one of these, with a one-line message."""

from __future__ import annotations

from typing import Optional


def caused_by(e: BaseException, kind: type[BaseException]) -> bool:
    """Whether e, or an error it was raised from or while handling, is a `kind`."""
    seen: set[int] = set()
    cur: Optional[BaseException] = e
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, kind):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False


class IdlehoundError(Exception):
    """Base class: the CLI prints the message on one line and exits with code 2."""


class _AboutOne(IdlehoundError):
    """An error about one named thing (a file, a variable): `what: problem`. Pickled by (what, problem), so the
    error can cross a process boundary."""

    def __init__(self, what: object, problem: str) -> None:
        self._what = str(what)
        self.problem = problem
        super().__init__(f"{self._what}: {problem}")

    def __reduce__(self) -> tuple[type[_AboutOne], tuple[str, str]]:
        return (type(self), (self._what, self.problem))


class TraceError(_AboutOne):
    """A trace file or folder cannot be read or is not a torch.profiler trace."""

    @property
    def path(self) -> str:
        return self._what


class CaptureError(IdlehoundError):
    """The profiler could not be run on the user's script."""


class SettingError(_AboutOne):
    """An IDLEHOUND_* environment variable has a value idlehound cannot use (idlehound.settings)."""

    @property
    def name(self) -> str:
        return self._what
