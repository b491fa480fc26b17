"""Errors of the experiment runner: scenarios it refuses, runs that cannot go on."""

from __future__ import annotations

from pathlib import Path

from innet.exceptions import InnetError, InputError


class ScenarioError(InputError, ValueError):
    """A scenario that cannot run; str() is "{path}:{line}: {key}: {what is wrong}"."""

    def __init__(self, path: Path | str, line: int | None, key: str, what: str) -> None:
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {key}: {what}" if key else f"{where}: {what}")
        self.path, self.line, self.key, self.what = path, line, key, what


class ExperimentError(InnetError):
    """The run cannot go on (a process died, a round missed its deadline): says which island."""
