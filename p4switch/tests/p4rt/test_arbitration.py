"""Client arbitration, on its own and through StreamChannel."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import ArbitrationRefusedError
from p4switch.p4rt.arbitration import Arbiter, Session
from tests.p4rt.fixtures import entities as E
from tests.p4rt.fixtures.p4rt_client import Client, Running, running_server, uint128

OK, ALREADY_EXISTS, NOT_FOUND = code_pb2.OK, code_pb2.ALREADY_EXISTS, code_pb2.NOT_FOUND


def update(election_id: int | None, device_id: int = 1) -> p4runtime_pb2.MasterArbitrationUpdate:
    msg = p4runtime_pb2.MasterArbitrationUpdate(device_id=device_id)
    if election_id is not None:
        msg.election_id.CopyFrom(uint128(election_id))
    return msg


def statuses(session: Session) -> list[int]:
    """The status codes of the arbitration notifications `session` received so far."""
    out = []
    while not session.outbox.empty():
        out.append(session.outbox.get().arbitration.status.code)
    return out


# --- the rules, without gRPC -----------------------------------------------------------------


def test_highest_election_id_is_primary_and_everyone_is_told() -> None:
    arbiter = Arbiter(1)
    low, high = Session(), Session()
    arbiter.update(low, update(5))
    assert statuses(low) == [OK]
    arbiter.update(high, update(9))
    assert statuses(high) == [OK]
    assert statuses(low) == [ALREADY_EXISTS]
    assert arbiter.primary() is high
    assert arbiter.is_primary(9) and not arbiter.is_primary(5) and not arbiter.is_primary(None)


def test_a_lower_newcomer_is_a_backup_and_only_it_is_told() -> None:
    arbiter = Arbiter(1)
    primary, backup = Session(), Session()
    arbiter.update(primary, update(9))
    statuses(primary)
    arbiter.update(backup, update(3))
    assert statuses(backup) == [ALREADY_EXISTS]
    assert statuses(primary) == []


def test_when_the_primary_leaves_there_is_no_primary_until_one_claims_it() -> None:
    arbiter = Arbiter(1)
    primary, backup = Session(), Session()
    arbiter.update(primary, update(9))
    arbiter.update(backup, update(3))
    statuses(primary), statuses(backup)
    arbiter.remove(primary)
    assert statuses(backup) == [NOT_FOUND]
    assert arbiter.primary() is None
    arbiter.update(backup, update(4))  # still below the highest id ever seen
    assert statuses(backup) == [NOT_FOUND]
    arbiter.update(backup, update(9))  # the old primary's id is free again
    assert statuses(backup) == [OK]
    assert arbiter.primary() is backup


def test_a_primary_stepping_down_leaves_no_primary() -> None:
    arbiter = Arbiter(1)
    a, b = Session(), Session()
    arbiter.update(a, update(9))
    arbiter.update(b, update(3))
    statuses(a), statuses(b)
    arbiter.update(a, update(1))
    assert statuses(a) == [NOT_FOUND] and statuses(b) == [NOT_FOUND]


def test_no_election_id_is_never_primary() -> None:
    arbiter = Arbiter(1)
    s = Session()
    arbiter.update(s, update(None))
    assert statuses(s) == [NOT_FOUND]
    assert arbiter.primary() is None


@pytest.mark.parametrize(
    ("first", "second", "code"),
    [
        (None, update(5, device_id=2), code_pb2.NOT_FOUND),  # unknown device
        (update(5), update(5, device_id=2), code_pb2.FAILED_PRECONDITION),  # device changed
    ],
)
def test_bad_updates_end_the_stream(first, second, code) -> None:
    arbiter = Arbiter(1)
    s = Session()
    if first is not None:
        arbiter.update(s, first)
    with pytest.raises(ArbitrationRefusedError) as caught:
        arbiter.update(s, second)
    assert caught.value.code == code


def test_an_election_id_in_use_is_refused() -> None:
    arbiter = Arbiter(1)
    arbiter.update(Session(), update(5))
    with pytest.raises(ArbitrationRefusedError) as caught:
        arbiter.update(Session(), update(5))
    assert caught.value.code == code_pb2.INVALID_ARGUMENT


def test_roles_other_than_the_default_are_unimplemented() -> None:
    msg = update(5)
    msg.role.name = "stats"
    with pytest.raises(ArbitrationRefusedError) as caught:
        Arbiter(1).update(Session(), msg)
    assert caught.value.code == code_pb2.UNIMPLEMENTED


# --- through gRPC ------------------------------------------------------------------------------


@pytest.fixture
def running() -> Iterator[Running]:
    with running_server() as running:
        yield running


def test_two_clients_the_higher_id_writes_the_lower_is_denied(running: Running) -> None:
    low, high = Client(running.port, 1), Client(running.port, 2)
    try:
        assert low.arbitrate().status.code == OK
        reply = high.arbitrate()
        assert reply.status.code == OK and reply.election_id.low == 2
        told = low.next("arbitration").arbitration
        assert told.status.code == ALREADY_EXISTS and told.election_id.low == 2
        with pytest.raises(grpc.RpcError) as caught:
            low.set_pipeline(running.p4info)
        assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
        high.set_pipeline(running.p4info)
        with pytest.raises(grpc.RpcError) as caught:
            low.write(E.update(E.INSERT, E.l2(b"\x02")))
        assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
        high.write(E.update(E.INSERT, E.l2(b"\x02")))
        assert len(low.read(E.entity(p4runtime_pb2.TableEntry()))) == 1  # anyone may read
    finally:
        low.close()
        high.close()


def test_write_with_a_stale_or_missing_election_id_is_denied(running: Running) -> None:
    client = Client(running.port, 7)
    try:
        client.arbitrate()
        client.set_pipeline(running.p4info)
        for eid in (6, None):
            client.election_id = eid
            with pytest.raises(grpc.RpcError) as caught:
                client.write(E.update(E.INSERT, E.l2(b"\x02")))
            assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
    finally:
        client.close()


def test_primary_disconnects_the_other_is_told_and_can_take_over(running: Running) -> None:
    backup, primary = Client(running.port, 1), Client(running.port, 2)
    try:
        backup.arbitrate()
        primary.arbitrate()
        primary.set_pipeline(running.p4info)
        assert backup.next("arbitration").arbitration.status.code == ALREADY_EXISTS
        primary.close()
        told = backup.next("arbitration").arbitration
        assert told.status.code == NOT_FOUND  # no primary any more
        assert told.election_id.low == 2  # the highest id the switch has seen
        reply = backup.arbitrate(election_id=3)
        assert reply.status.code == OK
        backup.write(E.update(E.INSERT, E.l2(b"\x02")))
    finally:
        backup.close()


def test_duplicate_election_id_ends_the_newcomer_stream(running: Running) -> None:
    first, second = Client(running.port, 4), Client(running.port, 4)
    try:
        first.arbitrate()
        second.open_stream()
        second.send(p4runtime_pb2.StreamMessageRequest(arbitration=update(4)))
        err = second.wait_stream_end()
        assert err is not None and err.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert running.server.arbiter.primary() is not None  # the first is still primary
    finally:
        first.close()
        second.close()


def test_wrong_device_id(running: Running) -> None:
    client = Client(running.port, 1)
    try:
        client.open_stream()
        client.send(p4runtime_pb2.StreamMessageRequest(arbitration=update(1, device_id=99)))
        err = client.wait_stream_end()
        assert err is not None and err.code() == grpc.StatusCode.NOT_FOUND
        with pytest.raises(grpc.RpcError) as caught:
            client.write(E.update(E.INSERT, E.l2(b"\x02")), device_id=99)
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    finally:
        client.close()
