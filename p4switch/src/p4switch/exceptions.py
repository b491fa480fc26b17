"""Every exception p4switch defines, all below `P4SwitchError`, and how its commands answer each.

`InputError`s are mistakes in what p4switch was given: a P4 program it refuses, a command-line
value, a shaping spec, a capture or P4Info file, a P4Info that does not describe the program, a
port number the switch does not have; a command exits 2 on one. The others are failures of
something asked for correctly; a command exits 1, or 3 on a `CompilerBug` (a p4switch bug). A
class that had a builtin base (`ValueError`, `LookupError`, `RuntimeError`) keeps it, so
`except ValueError` and the like still catch it.

The control-flow signals of the generated pipeline code (`compiler.support.ParserReject` and
`ControlExit`) are not errors and are not here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from p4switch.ir import Loc


class P4SwitchError(Exception):
    """Something p4switch could not do; str() says what, where and what to do about it."""

    exit_status: ClassVar[int] = 1


class InputError(P4SwitchError):
    """Bad input: a program, a file, a flag or a request p4switch refuses."""

    exit_status: ClassVar[int] = 2


def one_line(err: BaseException) -> str:
    """An error's message on one line (P4 compile errors can span several)."""
    return " ".join(str(err).split())


# --- the P4 front end and compiler -------------------------------------------------------------


class P4CompileError(InputError):
    """A program p4switch refuses; `str()` reads `file:line:col: error: what`."""

    def __init__(self, path: str, line: int, col: int, what: str) -> None:
        self.path = path
        self.line = line
        self.col = col
        self.what = what
        where = f"{path}:{line}:{col}" if line > 0 else path  # line 0: the file as a whole
        super().__init__(f"{where}: error: {what}")

    @classmethod
    def at(cls, loc: Loc | None, what: str) -> P4CompileError:
        if loc is None:
            return cls("<program>", 0, 0, what)
        return cls(loc.path, loc.line, loc.col, what)


class CompilerBug(P4SwitchError, RuntimeError):
    """The compiler failed on a program in a way it should not (the code generator met IR the
    type checker should have refused, or an unexpected exception): a p4switch bug. Commands
    exit 3 on one, apart from the 1 of other failures and the 2 of a refused program."""

    exit_status: ClassVar[int] = 3

    def __init__(self, what: str) -> None:
        super().__init__(f"internal error in the p4switch compiler: {what}; please report it")

    @classmethod
    def of(cls, exc: BaseException) -> CompilerBug:
        """`exc`, an unexpected exception raised while compiling, as one bounded line: the
        exception and the place in p4switch it was raised."""
        import traceback

        detail = one_line(exc)
        if len(detail) > _DETAIL_CHARS:
            detail = detail[:_DETAIL_CHARS] + "..."
        frames = traceback.extract_tb(exc.__traceback__)
        where = ""
        if frames:
            _, inside, tail = frames[-1].filename.rpartition("/p4switch/")
            where = f" (at {'p4switch/' + tail if inside else frames[-1].filename}"
            where += f":{frames[-1].lineno})"
        return cls(f"{type(exc).__name__}: {detail}{where}")


_DETAIL_CHARS = 200  # an exception's message kept in a CompilerBug (an IR dump can run long)


class NativeBuildError(P4SwitchError, RuntimeError):
    """The native (C) pipeline cannot be had: the python back end runs the program instead.
    A failed build names the generated .c file, kept for inspection."""


class NativeUnsupported(NativeBuildError):
    """A construct of a valid program the native back end cannot compile, and where it is."""

    def __init__(self, what: str, where: Loc | str | None = None) -> None:
        self.what = what
        self.where = str(where) if where is not None else "<program>"
        super().__init__(f"{self.where}: the native back end does not support {what}")


# --- the run-time state ------------------------------------------------------------------------


class StateError(P4SwitchError):
    """A change the state refuses; `code` is the gRPC canonical code name to report."""

    code: ClassVar[str] = "INVALID_ARGUMENT"


class InvalidArgument(StateError):
    code = "INVALID_ARGUMENT"


class AlreadyExists(StateError):
    code = "ALREADY_EXISTS"


class NotFound(StateError):
    code = "NOT_FOUND"


class ResourceExhausted(StateError):
    code = "RESOURCE_EXHAUSTED"


class FailedPrecondition(StateError):
    """A change the state cannot make as it stands: an action profile member still in use."""

    code = "FAILED_PRECONDITION"


class PermissionDenied(StateError):
    """A change the program forbids: a const default action, an action used outside its scope."""

    code = "PERMISSION_DENIED"


# --- the P4Runtime server ----------------------------------------------------------------------


class P4RTError(P4SwitchError):
    """A request, or one update or read of it, refused with a canonical gRPC code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class P4InfoMismatchError(InputError, ValueError):
    """The P4Info does not describe the loaded program, or uses what p4switch cannot program."""


class ArbitrationRefusedError(P4SwitchError):
    """An arbitration update the server refuses: the stream ends with this canonical code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class PacketInError(P4SwitchError, ValueError):
    """A frame for the CPU port too short to hold the packet_in header."""


# --- the switch process ------------------------------------------------------------------------


class UsageError(InputError):
    """A bad command-line value; printed as one line, exit status 2."""


class PortError(P4SwitchError):
    """An interface the switch cannot use as a port; the message says which one and what to do."""


class UnknownPortError(InputError, LookupError):
    """A port number the switch does not have."""


class ShapeError(InputError, ValueError):
    """A shaping specification that cannot be used; the message says which part and why."""


class ControlError(P4SwitchError):
    """The control channel cannot be set up or reached; the message says what to do."""


class PcapError(InputError, ValueError):
    """A file that is not a capture `p4switch.pcap` can read; the message says what is wrong."""


class P4InfoError(InputError, ValueError):
    """A file that is not a P4Info in protobuf text format."""


class UnitError(InputError, ValueError):
    """A rate or duration that cannot be parsed; the message quotes it and lists the units."""
