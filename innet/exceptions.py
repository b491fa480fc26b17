"""The root of every innet exception, and how the command line answers each kind.

Every package keeps its own exceptions module (`topo.exceptions`, `workers.exceptions`,
`p4switch.exceptions`, `controller.exceptions`, ...) whose classes descend from `InnetError`.
A class says what the command line exits with: `InputError` and its subclasses are mistakes in
what the user gave (a file, a flag, a request), exit status 2; every other `InnetError` is a
failure of something that was asked for correctly (a process died, a switch refused), exit
status 1. The CLI catches `InnetError` and reads `exit_status`; it keeps no list of classes.
"""

from __future__ import annotations

from typing import ClassVar


class InnetError(Exception):
    """Something innet could not do; str() says what, where and what to do about it."""

    exit_status: ClassVar[int] = 1


class InputError(InnetError):
    """Bad input: a file, a flag, an API request or a value innet refuses."""

    exit_status: ClassVar[int] = 2


class UnitError(InputError, ValueError):
    """A size, rate or duration that cannot be parsed; the message says why."""


def one_line(err: BaseException) -> str:
    """An error's message on one line (YAML and P4 errors can span several)."""
    return " ".join(str(err).split())
