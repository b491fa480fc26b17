"""Errors of the differential harness (all `InnetError`s; `CaseError` is bad input, exit 2)."""

from __future__ import annotations

from pathlib import Path

from innet.exceptions import InnetError, InputError


class P4DiffError(InnetError):
    """Something the harness could not do with input it accepted (exit status 1)."""


class CaseError(InputError):
    """A case file the harness refuses: the message names the file, its line and the step."""

    def __init__(self, path: Path | str, line: int | None, message: str) -> None:
        self.path, self.line, self.reason = Path(path), line, message
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")


class RecordingError(InputError):
    """A recording (--expect FILE) that cannot be read, or one that does not fit the case."""


class TargetUnavailable(InputError):
    """A target asked for on the command line that cannot run on this machine."""


class TargetError(P4DiffError):
    """A target failed to start, to take its pipeline, or died while a case played."""


class CaseFailed(P4DiffError):
    """A target did not do what the case itself requires (a batch refused or applied)."""


class NetnsError(P4DiffError):
    """A namespace or veth command failed; the message holds the command and its stderr."""


class FrameError(InputError, ValueError):
    """A frame that cannot be built from what a case file says (the loader adds where)."""
