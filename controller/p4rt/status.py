"""What a failed P4Runtime RPC means: its per-item errors, and whether its outcome is known.

A Write the switch answered with per-update errors (UNKNOWN with one `p4.v1.Error` per update
in the `grpc-status-details-bin` trailer) tells exactly what was applied. A Write refused as a
whole before anything ran (not primary, wrong device, no pipeline, malformed request) applied
nothing. Anything else — the deadline passed, the stream or server went away, a trailer too big
to deliver, an internal error — leaves the outcome unknown: the switch may have applied none,
some or all of the batch, and may still apply it after the client gave up.
"""

from __future__ import annotations

import grpc
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

from controller.p4rt.exceptions import (
    ArbitrationError,
    ConnectionLost,
    P4RuntimeError,
    WriteLost,
    WriteOutcomeUnknown,
    code_name,
)

# a Write refused with one of these applied nothing
NOTHING_APPLIED = frozenset(
    {
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.UNIMPLEMENTED,
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.OUT_OF_RANGE,
    }
)


def detail_errors(err: grpc.RpcError) -> list[p4runtime_pb2.Error] | None:
    """The p4.v1.Error of each update or request, from the grpc-status-details-bin trailer."""
    trailers = err.trailing_metadata() if hasattr(err, "trailing_metadata") else None
    for key, value in trailers or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            errors = []
            for detail in status.details:
                error = p4runtime_pb2.Error()
                if not detail.Unpack(error):
                    return None
                errors.append(error)
            return errors
    return None


def rpc_failure(switch: str, what: str, err: grpc.RpcError) -> P4RuntimeError:
    """The exception for an RPC other than Write (or a Write refused as a whole)."""
    code = err.code()
    text = f"switch {switch}: {what} failed: {code.name}: {err.details()}"
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
        return ConnectionLost(text + " (the switch stopped or restarted: reconnect)")
    if code == grpc.StatusCode.PERMISSION_DENIED:
        return ArbitrationError(text + " (this controller is not primary)")
    return P4RuntimeError(text)


def write_failure(switch: str, what: str, err: grpc.RpcError) -> P4RuntimeError:
    """The exception for a Write that ended without a per-update report."""
    code = err.code()
    if code in NOTHING_APPLIED:
        return rpc_failure(switch, what, err)
    lost = code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
    kind = WriteLost if lost else WriteOutcomeUnknown
    return kind(
        switch,
        code.name,
        f"switch {switch}: {what} ended with {code.name}: {err.details()}; the switch may have "
        "applied any part of it, now or later: its state is read back and reconciled before "
        "the next install",
    )


def partial_report(
    switch: str, total: int, errors: list[p4runtime_pb2.Error], err: grpc.RpcError
) -> P4RuntimeError:
    """A Write whose report details fewer updates than were sent (a switch keeps its error
    trailer under gRPC's metadata limit by summarising the rest): what became of the updates
    past the details is not known, so the switch is read back and reconciled."""
    refused = [
        f"#{i}: {code_name(e.canonical_code)}: {e.message}"
        for i, e in enumerate(errors)
        if e.canonical_code != code_pb2.OK
    ][:5]
    return WriteOutcomeUnknown(
        switch,
        "UNKNOWN",
        f"switch {switch}: a write of {total} updates was refused in part, with details for "
        f"the first {len(errors)} only ({'; '.join(refused) or 'none refused'}); the switch "
        f"says: {err.details()}; its state is read back and reconciled before the next install",
    )
