"""The error report of a Write or Read batch, kept within gRPC's metadata limit.

The P4Runtime specification reports a batch in which some updates (or read requests) failed as
the gRPC status UNKNOWN with a `google.rpc.Status` in the `grpc-status-details-bin` trailer: its
details hold one `p4.v1.Error` per item, in order, `OK` for those that succeeded. A trailer goes
in the HTTP/2 headers, and gRPC refuses headers over 8 KiB (`grpc.max_metadata_size`): with one
detail per item a batch of about 150 failures already passes it, and the client then sees
RESOURCE_EXHAUSTED instead of what went wrong.

`batch_status` keeps the report under `DETAIL_BUDGET` bytes whatever the batch: each message is
cut to `MESSAGE_CHARS` characters, and details are given in order for as many items as fit (the
first items of the batch); the status message then says how many items have details and counts
the failures beyond them by code. A client that pairs details with updates in order (as the
specification reads) gets the first items exactly and the rest as the summary.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import P4RTError

DETAIL_BUDGET = 4096  # bytes of the serialised Status: well under 8 KiB even base64-encoded
MESSAGE_CHARS = 160  # an item's message is cut to this
_FIELD_OVERHEAD = 4  # tag and length of one detail inside the Status


def batch_status(errors: Sequence[P4RTError | None], what: str) -> status_pb2.Status:
    """The UNKNOWN status reporting a batch in which at least one item failed."""
    failed = sum(e is not None for e in errors)
    status = status_pb2.Status(code=code_pb2.UNKNOWN)
    used = 0
    detailed = 0
    for err in errors:
        detail = p4runtime_pb2.Error()
        if err is not None:
            detail.canonical_code = err.code
            detail.message = _cut(err.message)
        packed = any_pb2.Any()
        packed.Pack(detail)
        size = packed.ByteSize() + _FIELD_OVERHEAD
        if used + size > DETAIL_BUDGET:
            break
        status.details.append(packed)
        used += size
        detailed += 1
    status.message = _summary(errors, what, failed, detailed)
    return status


def _summary(errors: Sequence[P4RTError | None], what: str, failed: int, detailed: int) -> str:
    message = f"{what}: {failed} of {len(errors)} failed"
    if detailed == len(errors):
        return message
    rest = Counter(code_pb2.Code.Name(e.code) for e in errors[detailed:] if e is not None)
    counts = ", ".join(f"{n} {name}" for name, n in sorted(rest.items()))
    beyond = f"{sum(rest.values())} more failed ({counts})" if rest else "no more failed"
    return (
        f"{message}; details for the first {detailed} (the report is kept under gRPC's "
        f"metadata limit), after them {beyond}"
    )


def _cut(message: str) -> str:
    return message if len(message) <= MESSAGE_CHARS else message[: MESSAGE_CHARS - 3] + "..."
