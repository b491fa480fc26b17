"""Errors of the controller's P4Runtime client (all `InnetError`s)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from innet.exceptions import InnetError, InputError


def code_name(code: int) -> str:
    try:
        return str(code_pb2.Code.Name(code))
    except ValueError:
        return str(code)


class P4RuntimeError(InnetError):
    """A P4Runtime request a switch refused or could not answer."""


class SwitchUnreachable(P4RuntimeError):
    """No answer from a switch's address before the deadline (not started, or wrong address)."""


class ConnectionLost(P4RuntimeError):
    """The switch's stream ended or an RPC found it unavailable (stopped or restarted)."""


class ArbitrationError(P4RuntimeError):
    """This controller could not become the switch's primary."""


@dataclass(frozen=True)
class UpdateFailure:
    """One refused update of a Write: its position in the batch, the update, code and message."""

    index: int
    update: p4runtime_pb2.Update
    code: int
    message: str

    @property
    def code_name(self) -> str:
        return code_name(self.code)


class WriteError(P4RuntimeError):
    """Some updates of a Write were refused; the others (`succeeded`, by index) were applied."""

    def __init__(
        self,
        switch: str,
        failures: Sequence[UpdateFailure],
        succeeded: Sequence[int],
        describe: Callable[[p4runtime_pb2.Entity], str] | None = None,
    ) -> None:
        self.switch = switch
        self.failures = tuple(failures)
        self.succeeded = tuple(succeeded)
        total = len(self.failures) + len(self.succeeded)
        lines = [f"switch {switch} refused {len(self.failures)} of {total} updates:"]
        for f in self.failures:
            kind = p4runtime_pb2.Update.Type.Name(f.update.type)
            what = describe(f.update.entity) if describe else f.update.entity.WhichOneof("entity")
            lines.append(f"  #{f.index} {kind} {what}: {f.code_name}: {f.message}")
        super().__init__("\n".join(lines))


class FabricError(P4RuntimeError):
    """A fabric-level request that cannot be carried out (unknown or lost switch)."""


class InstallError(P4RuntimeError):
    """A switch refused an installation; what was written elsewhere was rolled back.

    `unrestored` maps switches whose rollback failed to the reason: their state is unknown and
    `Fabric.reinstall` brings them back to the remembered state.
    """

    def __init__(
        self,
        switch: str,
        cause: P4RuntimeError,
        failures: Sequence[UpdateFailure],
        rolled_back: Sequence[str],
        unrestored: Mapping[str, str],
    ) -> None:
        self.switch = switch
        self.cause = cause
        self.failures = tuple(failures)
        self.rolled_back = tuple(rolled_back)
        self.unrestored = dict(unrestored)
        lines = [
            f"installation refused by switch {switch}; nothing installed anywhere.",
            str(cause),
        ]
        if rolled_back:
            lines.append(f"rolled back on: {', '.join(rolled_back)}")
        for name, why in self.unrestored.items():
            lines.append(f"could NOT restore {name} ({why}): call Fabric.reinstall({name!r})")
        super().__init__("\n".join(lines))


class SchemaError(InputError, ValueError):
    """A name the P4Info does not have, or a value that does not fit its field."""
