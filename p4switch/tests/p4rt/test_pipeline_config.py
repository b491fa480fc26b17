"""SetForwardingPipelineConfig, GetForwardingPipelineConfig and Capabilities."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import grpc
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.p4rt import LoadedProgram, P4RuntimeServer
from p4switch.runtime import Replica
from tests.p4rt.fixtures import entities as E
from tests.p4rt.fixtures.fake_program import (
    REJECTED_SOURCE,
    FakeDataPlane,
    load_p4info,
)
from tests.p4rt.fixtures.p4rt_client import (
    Client,
    Running,
    SetRequest,
    primary_client,
    running_server,
)

GetRequest = p4runtime_pb2.GetForwardingPipelineConfigRequest


@pytest.fixture
def running() -> Iterator[Running]:
    with running_server() as running:
        yield running


@pytest.fixture
def client(running: Running) -> Iterator[Client]:
    client = Client(running.port, 1)
    client.arbitrate()
    yield client
    client.close()


def get(
    client: Client, kind: int = GetRequest.ALL
) -> p4runtime_pb2.GetForwardingPipelineConfigResponse:
    return client.stub.GetForwardingPipelineConfig(GetRequest(device_id=1, response_type=kind))


def rpc_code(call: Callable[[], object]) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value.code()


def test_capabilities(client: Client) -> None:
    reply = client.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest())
    assert reply.p4runtime_api_version == "1.4.1"


def test_get_before_any_config_leaves_config_unset(client: Client) -> None:
    assert not get(client).HasField("config")


def test_get_returns_what_was_set(running: Running, client: Client) -> None:
    client.set_pipeline(running.p4info, source=b"program text", cookie=77)
    full = get(client).config
    assert full.p4info == running.p4info and full.p4_device_config == b"program text"
    assert full.cookie.cookie == 77
    cookie = get(client, GetRequest.COOKIE_ONLY).config
    assert cookie.cookie.cookie == 77 and not cookie.HasField("p4info")
    assert not cookie.p4_device_config
    assert get(client, GetRequest.P4INFO_AND_COOKIE).config.p4info == running.p4info
    assert not get(client, GetRequest.P4INFO_AND_COOKIE).config.p4_device_config
    device = get(client, GetRequest.DEVICE_CONFIG_AND_COOKIE).config
    assert device.p4_device_config == b"program text" and not device.HasField("p4info")
    assert rpc_code(lambda: get(client, 9)) == grpc.StatusCode.INVALID_ARGUMENT


def test_verify_checks_without_changing_anything(running: Running, client: Client) -> None:
    client.set_pipeline(running.p4info, action=SetRequest.VERIFY)
    assert running.dataplane.active is None and not get(client).HasField("config")
    bad = lambda: client.set_pipeline(running.p4info, REJECTED_SOURCE, SetRequest.VERIFY)  # noqa: E731
    with pytest.raises(grpc.RpcError) as caught:
        bad()
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "syntax error" in caught.value.details()


def test_save_then_commit(running: Running, client: Client) -> None:
    client.set_pipeline(running.p4info)
    first = running.dataplane.active
    client.write(E.update(E.INSERT, E.l2(b"\x01")))
    client.set_pipeline(running.p4info, action=SetRequest.VERIFY_AND_SAVE, cookie=2)
    assert running.dataplane.active is first  # the data plane still runs the first program
    client.write(E.update(E.INSERT, E.l2(b"\x02")))  # goes to the saved program
    assert get(client).config.cookie.cookie == 2
    saved = running.dataplane.loaded[-1]
    assert [e.match[0].value for e in saved.state.table("MyIngress.l2").entries()] == [2]
    client.set_pipeline(running.p4info, action=SetRequest.COMMIT)
    assert running.dataplane.active is saved
    assert rpc_code(lambda: client.set_pipeline(running.p4info, action=SetRequest.COMMIT)) == (
        grpc.StatusCode.NOT_FOUND
    )
    request = SetRequest(device_id=1, action=SetRequest.COMMIT)
    request.election_id.low = 1
    request.config.p4_device_config = b"x"
    with pytest.raises(grpc.RpcError) as caught:
        client.stub.SetForwardingPipelineConfig(request)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_a_new_program_starts_from_fresh_state(running: Running, client: Client) -> None:
    client.set_pipeline(running.p4info)
    client.write(E.update(E.INSERT, E.l2(b"\x01")))
    client.set_pipeline(running.p4info)
    assert len(running.dataplane.loaded) == 2
    assert client.read(E.entity(p4runtime_pb2.TableEntry())) == []


def test_reconcile_keeps_the_forwarding_state(running: Running, client: Client) -> None:
    client.set_pipeline(running.p4info)
    entry = E.l2(b"\x01", port=5)
    entry.metadata = b"kept"
    client.write(
        E.update(E.INSERT, entry),
        E.update(E.INSERT, E.group(3, 1, 2)),
        E.update(E.MODIFY, E.register(4, b"\x09")),
    )
    old = running.dataplane.active.state
    next(old.table("MyIngress.l2").entries()).packets = 8
    client.set_pipeline(running.p4info, action=SetRequest.RECONCILE_AND_COMMIT)
    new = running.dataplane.active.state
    assert new is not old
    (kept,) = new.table("MyIngress.l2").entries()
    assert (kept.action.args, kept.metadata, kept.packets) == ((5,), b"kept", 8)
    assert new.pre.groups[3] == (Replica(1, 0), Replica(2, 0))
    assert new.register("MyIngress.reg").cells[4] == 9
    (read,) = client.read(E.entity(p4runtime_pb2.TableEntry(table_id=E.L2)))
    assert read.table_entry.metadata == b"kept"


def test_reconcile_refuses_a_program_that_drops_a_used_table(
    running: Running, client: Client
) -> None:
    client.set_pipeline(running.p4info)
    client.write(E.update(E.INSERT, E.l2(b"\x01")))
    smaller = p4info_pb2.P4Info()
    smaller.CopyFrom(running.p4info)
    del smaller.tables[2]  # MyIngress.l2
    del smaller.direct_counters[:]
    active = running.dataplane.active
    with pytest.raises(grpc.RpcError) as caught:
        client.set_pipeline(smaller, action=SetRequest.RECONCILE_AND_COMMIT)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "MyIngress.l2" in caught.value.details()
    assert running.dataplane.active is active
    assert len(client.read(E.entity(p4runtime_pb2.TableEntry()))) == 1


def test_only_the_primary_sets_the_pipeline_and_requests_must_be_complete(
    running: Running, client: Client
) -> None:
    backup = Client(running.port, 0)
    try:
        backup.arbitrate()
        denied = rpc_code(lambda: backup.set_pipeline(running.p4info))
        assert denied == grpc.StatusCode.PERMISSION_DENIED
    finally:
        backup.close()
    no_config = SetRequest(device_id=1, action=SetRequest.VERIFY_AND_COMMIT)
    no_config.election_id.low = 1
    unspecified = SetRequest(device_id=1)
    unspecified.election_id.low = 1
    unspecified.config.p4info.CopyFrom(running.p4info)
    for request in (no_config, unspecified):
        code = rpc_code(lambda r=request: client.stub.SetForwardingPipelineConfig(r))
        assert code == grpc.StatusCode.INVALID_ARGUMENT
    other_device = SetRequest(device_id=2, action=SetRequest.VERIFY)
    assert rpc_code(lambda: client.stub.SetForwardingPipelineConfig(other_device)) == (
        grpc.StatusCode.NOT_FOUND
    )


def test_a_loader_crash_is_an_internal_error_not_a_dead_server() -> None:
    def crash(p4info: p4info_pb2.P4Info, source: bytes) -> LoadedProgram:
        raise RuntimeError("compiler bug")

    server = P4RuntimeServer(device_id=1, loader=crash, send_packet_out=lambda frame: None)
    port = server.start("127.0.0.1:0")
    client = Client(port, 1)
    try:
        client.arbitrate()
        assert rpc_code(lambda: client.set_pipeline(load_p4info())) == grpc.StatusCode.INTERNAL
        reply = client.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest())
        assert reply.p4runtime_api_version
    finally:
        client.close()
        server.stop(0.5)


def test_an_initial_program_is_served_without_a_set() -> None:
    dataplane = FakeDataPlane()
    initial = dataplane.load(load_p4info(), b"initial source")
    server = P4RuntimeServer(
        device_id=1,
        loader=dataplane.load,
        send_packet_out=dataplane.send_packet_out,
        initial=initial,
    )
    port = server.start("127.0.0.1:0")
    client = Client(port, 1)
    try:
        client.arbitrate()
        assert get(client).config.p4_device_config == b"initial source"
        client.write(E.update(E.INSERT, E.l2(b"\x01")))
        assert initial.state.table("MyIngress.l2").entry_count() == 1
    finally:
        client.close()
        server.stop(0.5)


def test_a_second_server_on_the_same_port_fails(running: Running) -> None:
    other = P4RuntimeServer(device_id=1, loader=FakeDataPlane().load, send_packet_out=print)
    with pytest.raises(OSError):
        other.start(f"127.0.0.1:{running.port}")


def test_primary_client_helper_sets_the_pipeline(running: Running) -> None:
    with primary_client(running) as client:
        assert get(client).config.p4info == running.p4info
