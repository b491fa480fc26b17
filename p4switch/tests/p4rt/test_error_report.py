"""The error report of a failed batch stays under gRPC's metadata limit, however large the
batch, and still tells the client what went wrong."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from google.rpc import code_pb2
from hypothesis import given, settings
from hypothesis import strategies as st
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import P4RTError
from p4switch.p4rt.report import DETAIL_BUDGET, batch_status
from tests.p4rt.fixtures import entities as E
from tests.p4rt.fixtures.p4rt_client import (
    Client,
    Running,
    code_names,
    primary_client,
    running_server,
    write_errors,
)

TRAILER_LIMIT = 7 * 1024  # bytes: what the report must stay under, base64-encoded or not


@pytest.fixture
def client() -> Iterator[Client]:
    running: Running
    with running_server() as running, primary_client(running) as client:
        yield client


def trailer(err: grpc.RpcError) -> bytes:
    return dict(err.trailing_metadata() or ())["grpc-status-details-bin"]


def test_a_thousand_failing_updates_get_a_readable_summary(client: Client) -> None:
    deletes = [E.update(p4runtime_pb2.Update.DELETE, E.group(100 + i, 1)) for i in range(1000)]
    with pytest.raises(grpc.RpcError) as caught:
        client.write(*deletes)
    err = caught.value
    assert err.code() == grpc.StatusCode.UNKNOWN  # not RESOURCE_EXHAUSTED from the metadata
    assert len(trailer(err)) * 4 / 3 < TRAILER_LIMIT
    details = write_errors(err)
    assert 0 < len(details) < 1000
    assert set(code_names(details)) == {"NOT_FOUND"}
    assert "100" in details[0].message  # the first updates keep their own message
    message = err.details() or ""
    assert message.startswith("Write: 1000 of 1000 failed")
    assert f"details for the first {len(details)}" in message
    assert f"after them {1000 - len(details)} more failed ({1000 - len(details)} NOT_FOUND)" in (
        message
    )


def test_a_mixed_batch_past_the_old_limit_keeps_successes_in_order(client: Client) -> None:
    updates = [E.update(p4runtime_pb2.Update.INSERT, E.group(1 + i % 100, 1)) for i in range(200)]
    with pytest.raises(grpc.RpcError) as caught:
        client.write(*updates)  # the second hundred are duplicates
    err = caught.value
    assert err.code() == grpc.StatusCode.UNKNOWN
    names = code_names(write_errors(err))
    assert names[:100] == ["OK"] * 100 and set(names[100:]) == {"ALREADY_EXISTS"}
    assert (err.details() or "").startswith("Write: 100 of 200 failed")


def test_a_small_batch_gets_one_detail_per_update() -> None:
    errors = [None, P4RTError(code_pb2.NOT_FOUND, "no group 7"), None]
    status = batch_status(errors, "Write")
    assert len(status.details) == 3 and status.message == "Write: 1 of 3 failed"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.builds(
                P4RTError,
                st.sampled_from([code_pb2.NOT_FOUND, code_pb2.INVALID_ARGUMENT]),
                st.text(max_size=5000),
            ),
        ),
        min_size=1,
        max_size=3000,
    ).filter(lambda errors: any(e is not None for e in errors))
)
def test_the_report_is_within_budget_for_any_batch(errors: list[P4RTError | None]) -> None:
    status = batch_status(errors, "Write")
    assert status.ByteSize() <= DETAIL_BUDGET + len(status.message.encode()) + 8
    assert status.ByteSize() * 4 / 3 < TRAILER_LIMIT
    assert status.message.startswith(f"Write: {sum(e is not None for e in errors)} of ")
    kept = [p4runtime_pb2.Error() for _ in status.details]
    for detail, error in zip(status.details, kept, strict=True):
        assert detail.Unpack(error)
    for error, original in zip(kept, errors, strict=False):  # in order, the batch's first
        assert error.canonical_code == (original.code if original else code_pb2.OK)
