"""The error report of a Write or Read batch: one p4.v1.Error per item, within gRPC's limit.

The P4Runtime specification reports a batch in which some updates (or read requests) failed as
the gRPC status UNKNOWN with a `google.rpc.Status` in the `grpc-status-details-bin` trailer: its
details hold one `p4.v1.Error` per item, in order, `OK` (and nothing else) for those that
succeeded. Trailers are HTTP/2 headers, and a gRPC core client (grpcio, the C++ library) refuses
received metadata over `grpc.max_metadata_size`, 8 KiB by default, counting each entry as its
name, its value (binary values decoded) and 32 bytes; between that and a hard limit (16 KiB) it
refuses at random. The client then sees RESOURCE_EXHAUSTED in place of the report.

So a report always carries every item's code, and the messages only while they fit:
`batch_status` gives each failure its code, then adds the failures' messages, in order, cut to
`MESSAGE_CHARS`, while the trailers stay within `METADATA_LIMIT`. When even the codes alone do
not fit, `unreportable` says so: the whole batch is then refused with RESOURCE_EXHAUSTED and no
details (an RPC-wide error, as the specification has it), the server having undone what it
applied, and the message counts the failures by code. Any batch of at most `always_reported()`
items fits, whatever fails.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import P4RTError

METADATA_LIMIT = 8192  # bytes: gRPC core's default grpc.max_metadata_size, on the client's side
MARGIN = 64  # bytes kept free below it, for any trailer gRPC adds on its own
MESSAGE_CHARS = 160  # a failure's message is cut to this
STATUS_MESSAGE_BYTES = 2048  # the message of a refused request is cut to this, percent-encoded
ENTRY_OVERHEAD = 32  # bytes gRPC counts for each metadata entry besides name and value
DETAILS_KEY = "grpc-status-details-bin"


def trailer_size(status: status_pb2.Status) -> int:
    """What a gRPC core client counts against its metadata limit for the trailers of `status`."""
    entries = (
        ("grpc-status", len(str(status.code))),
        ("grpc-message", _percent_encoded_len(status.message)),
        (DETAILS_KEY, status.ByteSize()),
    )
    return sum(len(name) + size + ENTRY_OVERHEAD for name, size in entries)


def always_reported() -> int:
    """The largest batch whose report fits whatever fails (every item failing, codes only)."""
    items = METADATA_LIMIT // _FAILED_SIZE
    while not _codes_fit(items, items, "Write"):
        items -= 1
    return items


def unreportable(errors: Sequence[P4RTError | None], what: str) -> P4RTError | None:
    """The RESOURCE_EXHAUSTED refusal of a batch whose codes alone do not fit (None: they fit)."""
    failed = sum(e is not None for e in errors)
    if failed == 0 or _codes_fit(failed, len(errors), what):
        return None
    counts = Counter(code_pb2.Code.Name(e.code) for e in errors if e is not None)
    by_code = ", ".join(f"{n} {name}" for name, n in sorted(counts.items()))
    return P4RTError(
        code_pb2.RESOURCE_EXHAUSTED,
        f"{what}: {failed} of {len(errors)} failed ({by_code}); one p4.v1.Error per item does "
        f"not fit in gRPC's {METADATA_LIMIT}-byte metadata limit, so the batch is refused whole "
        f"and nothing was applied; a batch of at most {always_reported()} items is always "
        "reported",
    )


def batch_status(errors: Sequence[P4RTError | None], what: str) -> status_pb2.Status:
    """The UNKNOWN status of a batch in which at least one item failed and which is not
    `unreportable`: every item's code, in order, and as many messages as fit."""
    failed = sum(e is not None for e in errors)
    status = status_pb2.Status(code=code_pb2.UNKNOWN)
    for err in errors:
        status.details.append(_detail(code_pb2.OK if err is None else err.code))
    room = METADATA_LIMIT - MARGIN - _codes_size(failed, len(errors), what)
    left_out = 0
    for err, packed in zip(errors, status.details, strict=True):
        if err is None or not err.message:
            continue
        with_message = _detail(err.code, _cut(err.message))
        growth = _field_size(with_message.ByteSize()) - _field_size(packed.ByteSize())
        if growth <= room:
            packed.CopyFrom(with_message)
            room -= growth
        else:
            left_out += 1
    status.message = _summary(what, failed, len(errors), left_out)
    return status


def _codes_fit(failed: int, items: int, what: str) -> bool:
    return _codes_size(failed, items, what) <= METADATA_LIMIT - MARGIN


def _codes_size(failed: int, items: int, what: str) -> int:
    """The trailers of a report of codes only, with the longest message it can have."""
    longest = _summary(what, failed, items, failed)
    fixed = trailer_size(status_pb2.Status(code=code_pb2.UNKNOWN, message=longest))
    return fixed + failed * _FAILED_SIZE + (items - failed) * _SUCCEEDED_SIZE


def _summary(what: str, failed: int, items: int, left_out: int = 0) -> str:
    message = f"{what}: {failed} of {items} failed"
    if left_out:
        message += f"; {left_out} messages left out"
    return message


def _detail(code: int, message: str = "") -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(p4runtime_pb2.Error(canonical_code=code, message=message))
    return packed


def _field_size(length: int) -> int:
    """Bytes of a length-delimited field of `length` bytes (tag, length, value)."""
    return 1 + _varint_size(length) + length


def _varint_size(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


# the size of one detail of codes only, in the Status (every canonical code takes one byte)
_SUCCEEDED_SIZE = _field_size(_detail(code_pb2.OK).ByteSize())
_FAILED_SIZE = _field_size(_detail(code_pb2.UNKNOWN).ByteSize())


def _percent_encoded_len(text: str) -> int:
    """gRPC sends grpc-message percent-encoded: a byte outside ' '..'~', or '%', takes three."""
    return sum(1 if 0x20 <= b <= 0x7E and b != 0x25 else 3 for b in text.encode())


def status_message(message: str) -> str:
    """`message` as the message of an RPC's status: cut to `STATUS_MESSAGE_BYTES` as gRPC
    sends it (percent-encoded), so that a long error (a P4 compile error quoting its line, a
    name from the request) reaches the client instead of breaking the metadata limit. A lone
    surrogate (from undecodable bytes) is written as its escape, since gRPC sends UTF-8."""
    message = message.encode("utf-8", "backslashreplace").decode()
    if _percent_encoded_len(message) <= STATUS_MESSAGE_BYTES:
        return message
    kept, size = [], len("...")
    for char in message:
        size += _percent_encoded_len(char)
        if size > STATUS_MESSAGE_BYTES:
            break
        kept.append(char)
    return "".join(kept) + "..."


def _cut(message: str) -> str:
    message = message.encode("utf-8", "backslashreplace").decode()  # protobuf takes no surrogate
    return message if len(message) <= MESSAGE_CHARS else message[: MESSAGE_CHARS - 3] + "..."
