"""Typed errors. Every user-facing failure is one of these, with a one-line message."""

from __future__ import annotations


class IdlehoundError(Exception):
    """Base class: the CLI prints the message on one line and exits with code 2."""


class TraceError(IdlehoundError):
    """A trace file or folder cannot be read or is not a torch.profiler trace."""

    def __init__(self, path: object, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")

    def __reduce__(
        self,
    ) -> tuple[
        type[TraceError], tuple[str, str]
    ]:  # pickle by (path, problem), so the error can cross a process boundary
        return (type(self), (self.path, self.problem))


class CaptureError(IdlehoundError):
    """The profiler could not be run on the user's script."""


class SettingError(IdlehoundError):
    """An IDLEHOUND_* environment variable has a value idlehound cannot use (idlehound.settings)."""

    def __init__(self, name: str, problem: str) -> None:
        self.name = name
        self.problem = problem
        super().__init__(f"{name}: {problem}")

    def __reduce__(
        self,
    ) -> tuple[
        type[SettingError], tuple[str, str]
    ]:  # pickle by (name, problem), so the error can cross a process boundary
        return (type(self), (self.name, self.problem))
