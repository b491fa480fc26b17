"""Errors of the planner: parameters it cannot plan for, schedules that are not schedules."""

from __future__ import annotations

from pathlib import Path

from innet.exceptions import InputError


class PlanError(InputError, ValueError):
    """Parameters the planner cannot work with (e.g. memory below one slot)."""


class ScheduleError(InputError, ValueError):
    """A schedule that is not a cyclic sequence of partitions of the islands."""


class ScheduleFileError(InputError, ValueError):
    """A schedule file that cannot be loaded; str() is "{path}:{line}: {what is wrong}"."""

    def __init__(self, path: Path, line: int | None, what: str) -> None:
        super().__init__(f"{path}:{line}: {what}" if line is not None else f"{path}: {what}")
        self.path, self.line = path, line
