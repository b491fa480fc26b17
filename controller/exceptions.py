"""Errors of the controller's core: the testbed, its run directory, per-round entries."""

from __future__ import annotations

from typing import ClassVar

from innet.exceptions import InnetError, InputError


class TestbedError(InnetError):
    """A request the running testbed cannot carry out (a switch unreadable, a channel down);
    the message says why and what to do."""

    __test__ = False  # a testbed error, not a pytest test class


class RunDirError(InputError):
    """A run directory another innet process owns, or one a crash left state in."""


class RoundEntriesError(InputError, ValueError):
    """A round, WAN or addressing that innet.p4's tables cannot carry."""


class CommandLineError(InputError):
    """A command-line value the parser accepted but innet cannot use (e.g. --points 1)."""


class Interrupted(InnetError):
    """Ctrl-C (or SIGTERM) ended a command; the message says what it leaves behind."""

    exit_status: ClassVar[int] = 130  # 128 + SIGINT, as a shell reports it
