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
    """This controller could not become the switch's primary, or is no longer its primary."""


class WriteOutcomeUnknown(P4RuntimeError):
    """A Write ended without telling what it did (deadline passed, stream gone, no per-update
    report): the switch may have applied none, some or all of it, now or later."""

    def __init__(self, switch: str, code: str, message: str) -> None:
        self.switch, self.code = switch, code
        super().__init__(message)


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


class WriteLost(WriteOutcomeUnknown, ConnectionLost):
    """The connection went away during a Write: the outcome is unknown and the switch must be
    reached again (it stopped, restarted, or the stream broke)."""


class FabricError(P4RuntimeError):
    """A fabric-level request that cannot be carried out (unknown or lost switch)."""


class ReconcileError(FabricError):
    """A switch's state could not be read back or brought to the desired state."""


class InstallError(P4RuntimeError):
    """A switch refused an installation; what was written elsewhere was rolled back.

    `unrestored` maps switches whose rollback failed, or whose write ended with an unknown
    outcome, to the reason: the fabric marks them diverged and reads them back and reconciles
    them with the desired state before the next install (`Fabric.reconcile`).
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
        outcome = "nothing installed anywhere" if not unrestored else "undone where known"
        lines = [f"installation refused by switch {switch}; {outcome}.", str(cause)]
        if rolled_back:
            lines.append(f"rolled back on: {', '.join(rolled_back)}")
        for name, why in self.unrestored.items():
            lines.append(
                f"state of {name} unknown ({why}): it is read back and reconciled before the "
                "next install"
            )
        super().__init__("\n".join(lines))


class SchemaError(InputError, ValueError):
    """A name the P4Info does not have, or a value that does not fit its field."""
