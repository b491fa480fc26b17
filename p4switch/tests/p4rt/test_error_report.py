"""A failed batch reports one p4.v1.Error per item, in order, to a default gRPC client; a batch
whose report cannot fit in gRPC's metadata limit is refused whole, and says so."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from google.rpc import code_pb2, status_pb2
from hypothesis import given, settings
from hypothesis import strategies as st
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import P4RTError
from p4switch.p4rt.report import (
    DETAILS_KEY,
    MARGIN,
    MESSAGE_CHARS,
    METADATA_LIMIT,
    STATUS_MESSAGE_BYTES,
    always_reported,
    batch_status,
    status_message,
    trailer_size,
    unreportable,
)
from tests.p4rt.fixtures import entities as E
from tests.p4rt.fixtures.p4rt_client import (
    Client,
    Running,
    code_names,
    primary_client,
    running_server,
    write_errors,
)

INSERT, DELETE = p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.DELETE
EXISTING = 5  # the multicast group each test writes first


@pytest.fixture
def client() -> Iterator[Client]:
    running: Running
    with running_server() as running, primary_client(running) as client:
        client.write(E.update(INSERT, E.group(EXISTING, 1)))
        yield client


def missing_groups_but_one(size: int, duplicate_at: int) -> list[p4runtime_pb2.Update]:
    """`size` deletes of absent groups (NOT_FOUND), but for one insert of EXISTING there."""
    updates = [E.update(DELETE, E.group(1000 + i, 1)) for i in range(size)]
    updates[duplicate_at] = E.update(INSERT, E.group(EXISTING, 2))
    return updates


def expected(size: int, duplicate_at: int) -> list[str]:
    names = ["NOT_FOUND"] * size
    names[duplicate_at] = "ALREADY_EXISTS"
    return names


def groups(client: Client) -> set[int]:
    query = p4runtime_pb2.PacketReplicationEngineEntry()
    query.multicast_group_entry.SetInParent()
    entities = client.read(E.entity(query))
    return {
        e.packet_replication_engine_entry.multicast_group_entry.multicast_group_id for e in entities
    }


def test_201_failed_updates_each_reach_a_default_client_in_order(client: Client) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        client.write(*missing_groups_but_one(201, 137))
    err = caught.value
    assert err.code() == grpc.StatusCode.UNKNOWN, err.details()
    details = write_errors(err)
    assert code_names(details) == expected(201, 137)
    assert "1000" in details[0].message  # the first failures keep their messages
    assert (err.details() or "").startswith("Write: 201 of 201 failed")


def test_the_largest_batch_always_reported_reaches_a_default_client(client: Client) -> None:
    size = always_reported()
    assert size >= 201
    for _ in range(5):  # over gRPC's soft limit a client refuses at random
        with pytest.raises(grpc.RpcError) as caught:
            client.write(*missing_groups_but_one(size, size - 1))
        assert caught.value.code() == grpc.StatusCode.UNKNOWN, caught.value.details()
        assert code_names(write_errors(caught.value)) == expected(size, size - 1)


def test_a_mixed_batch_reports_its_successes_as_ok(client: Client) -> None:
    updates = [E.update(INSERT, E.group(10 + i % 100, 1)) for i in range(200)]
    with pytest.raises(grpc.RpcError) as caught:
        client.write(*updates)  # the second hundred are duplicates
    names = code_names(write_errors(caught.value))
    assert names == ["OK"] * 100 + ["ALREADY_EXISTS"] * 100
    assert all(not e.message for e in write_errors(caught.value)[:100])


@pytest.mark.parametrize("size", [1000, 5000])
def test_a_batch_too_large_to_report_is_refused_whole(client: Client, size: int) -> None:
    updates = missing_groups_but_one(size, size // 2)
    updates[1] = E.update(INSERT, E.group(7, 1))  # would succeed: must not stay applied
    with pytest.raises(grpc.RpcError) as caught:
        client.write(*updates)
    err = caught.value
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert DETAILS_KEY not in dict(err.trailing_metadata() or ())
    message = err.details() or ""
    assert f"Write: {size - 1} of {size} failed (1 ALREADY_EXISTS, {size - 2} NOT_FOUND)" in message
    assert f"at most {always_reported()} items is always reported" in message
    assert groups(client) == {EXISTING}

    names = []  # the client does as told: batches of always_reported() updates
    step = always_reported()
    for start in range(0, size, step):
        try:
            client.write(*updates[start : start + step])
            names += ["OK"] * len(updates[start : start + step])
        except grpc.RpcError as part:
            assert part.code() == grpc.StatusCode.UNKNOWN, part.details()
            names += code_names(write_errors(part))
    assert names == ["NOT_FOUND", "OK", *expected(size, size // 2)[2:]]


def test_a_large_batch_that_succeeds_is_applied(client: Client) -> None:
    client.write(*(E.update(INSERT, E.group(100 + i, 1)) for i in range(5000)))
    assert len(groups(client)) == 5001


def test_a_read_too_large_to_report_is_refused(client: Client) -> None:
    unknown = E.entity(p4runtime_pb2.TableEntry(table_id=12345))
    with pytest.raises(grpc.RpcError) as caught:
        client.read(*[unknown] * 201)
    assert caught.value.code() == grpc.StatusCode.UNKNOWN
    assert code_names(write_errors(caught.value)) == ["NOT_FOUND"] * 201
    with pytest.raises(grpc.RpcError) as caught:
        client.read(*[unknown] * 1000)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "Read: 1000 of 1000 failed (1000 NOT_FOUND)" in (caught.value.details() or "")


# --- the packing ---------------------------------------------------------------------------


def unpacked(status: status_pb2.Status) -> list[p4runtime_pb2.Error]:
    errors = [p4runtime_pb2.Error() for _ in status.details]
    for detail, error in zip(status.details, errors, strict=True):
        assert detail.Unpack(error)
    return errors


def test_a_small_batch_keeps_every_message() -> None:
    errors = [None, P4RTError(code_pb2.NOT_FOUND, "no group 7"), None]
    status = batch_status(errors, "Write")
    assert status.message == "Write: 1 of 3 failed"
    assert [(e.canonical_code, e.message) for e in unpacked(status)] == [
        (code_pb2.OK, ""),
        (code_pb2.NOT_FOUND, "no group 7"),
        (code_pb2.OK, ""),
    ]


def test_messages_give_way_to_codes() -> None:
    errors: list[P4RTError | None] = [P4RTError(code_pb2.NOT_FOUND, "x" * 500)] * 150
    status = batch_status(errors, "Write")
    kept = unpacked(status)
    assert [e.canonical_code for e in kept] == [code_pb2.NOT_FOUND] * 150
    with_message = sum(bool(e.message) for e in kept)
    assert 0 < with_message < 150 and all(
        len(e.message) == MESSAGE_CHARS for e in kept[:with_message]
    )
    assert status.message.endswith(f"; {150 - with_message} messages left out")
    assert trailer_size(status) <= METADATA_LIMIT - MARGIN


def test_the_trailer_size_counts_as_grpc_does() -> None:
    # grpcio 1.85 refusing a report: "grpc-status:44B grpc-message:52B
    # grpc-status-details-bin:8207B" for an 8,152-byte status with message "Write: x"
    status = status_pb2.Status(code=code_pb2.UNKNOWN, message="Write: x")
    status.details.add().value = b"\0" * (8152 - status.ByteSize() - 6)
    assert status.ByteSize() == 8152
    assert trailer_size(status) == 44 + 52 + 8207


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.builds(
                P4RTError,
                st.sampled_from([code_pb2.NOT_FOUND, code_pb2.ALREADY_EXISTS, code_pb2.ABORTED]),
                st.text(max_size=400),
            ),
        ),
        min_size=1,
        max_size=400,
    ).filter(lambda errors: any(e is not None for e in errors))
)
def test_a_batch_is_reported_item_by_item_or_refused(errors: list[P4RTError | None]) -> None:
    refusal = unreportable(errors, "Write")
    codes_only = status_pb2.Status(code=code_pb2.UNKNOWN)
    codes_only.details.extend(
        batch_status([e and P4RTError(e.code, "") for e in errors], "Write").details
    )
    if refusal is not None:
        assert refusal.code == code_pb2.RESOURCE_EXHAUSTED
        assert len(errors) > always_reported()
        assert codes_only.ByteSize() > METADATA_LIMIT - MARGIN - 200
        return
    status = batch_status(errors, "Write")
    assert trailer_size(status) <= METADATA_LIMIT - MARGIN
    kept = unpacked(status)
    assert [e.canonical_code for e in kept] == [
        code_pb2.OK if e is None else e.code for e in errors
    ]
    for error, original in zip(kept, errors, strict=True):
        if original is None:
            assert error.message == ""
        else:  # the message, or its start, or nothing
            assert original.message.startswith(error.message.removesuffix("..."))


def test_a_status_message_is_cut_as_grpc_sends_it() -> None:
    assert status_message("no device 7 here") == "no device 7 here"
    cut = status_message("é" * 5000)  # six bytes each, percent-encoded
    assert cut.endswith("...") and cut.startswith("é" * 300)
    assert len(cut.encode()) * 3 <= STATUS_MESSAGE_BYTES + 9
    assert status_message("bad \udcff byte") == "bad \\udcff byte"  # gRPC sends UTF-8
