"""Client deadlines: work whose deadline passed is refused and leaves no trace; a program being
loaded holds no lock that writes and reads need."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import grpc
import pytest
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import P4RTError
from p4switch.p4rt import LoadedProgram, P4RuntimeServer
from tests.unit.p4switch.p4rt.fixtures import entities as E
from tests.unit.p4switch.p4rt.fixtures.fake_program import FakeDataPlane, load_p4info
from tests.unit.p4switch.p4rt.fixtures.p4rt_client import WAIT, Client, wait_until

SLOW_LOAD = b"// compiles until the test lets it"
SLOW_ACTIVATE = b"// switches over until the test lets it"
INSERT = p4runtime_pb2.Update.INSERT
DEADLINE = 0.5  # seconds: the client's deadline for the request that must expire


class HeldDataPlane(FakeDataPlane):
    """The fake data plane, with a program whose load and one whose activation wait for
    `release` (each says when it has started waiting)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.loading = threading.Event()
        self.activating = threading.Event()

    def load(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> LoadedProgram:
        if device_config == SLOW_LOAD:
            self.loading.set()
            assert self.release.wait(WAIT), "the test never released the load"
        program = super().load(p4info, device_config)
        if device_config != SLOW_ACTIVATE:
            return program
        activate = program.activate

        def held() -> None:
            self.activating.set()
            assert self.release.wait(WAIT), "the test never released the activation"
            activate()

        return LoadedProgram(program.p4info, device_config, program.state, held)


@dataclass
class Switch:
    server: P4RuntimeServer
    dataplane: HeldDataPlane
    client: Client
    p4info: p4info_pb2.P4Info


@pytest.fixture
def switch() -> Iterator[Switch]:
    dataplane = HeldDataPlane()
    server = P4RuntimeServer(
        device_id=1, loader=dataplane.load, send_packet_out=dataplane.send_packet_out
    )
    port = server.start("127.0.0.1:0")
    client = Client(port, 10)
    try:
        client.arbitrate()
        p4info = load_p4info()
        client.set_pipeline(p4info, cookie=1)
        yield Switch(server, dataplane, client, p4info)
    finally:
        dataplane.release.set()
        client.close()
        server.stop(grace=0.5)


@contextmanager
def pushing(switch: Switch, source: bytes, cookie: int) -> Iterator[dict[str, object]]:
    """Push `source` from another thread; on leaving, release it and wait for its answer."""
    outcome: dict[str, object] = {}

    def push() -> None:
        try:
            outcome["reply"] = switch.client.set_pipeline(switch.p4info, source, cookie=cookie)
        except grpc.RpcError as err:
            outcome["error"] = err.code()

    thread = threading.Thread(target=push, daemon=True)
    thread.start()
    try:
        yield outcome
    finally:
        switch.dataplane.release.set()
        thread.join(WAIT)
        assert not thread.is_alive(), "the push never finished"


def write_request(client: Client, *updates: p4runtime_pb2.Update) -> p4runtime_pb2.WriteRequest:
    request = p4runtime_pb2.WriteRequest(device_id=1, updates=updates)
    request.election_id.low = client.election_id or 0
    return request


def groups(client: Client) -> list[int]:
    entities = client.read(E.entity(E.group(0)))
    return [
        e.packet_replication_engine_entry.multicast_group_entry.multicast_group_id for e in entities
    ]


def expired(switch: Switch) -> int:
    return getattr(switch.server, "requests_expired", 0)


def cookie(switch: Switch) -> int:
    get = p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1)
    return switch.client.stub.GetForwardingPipelineConfig(get).config.cookie.cookie


def test_a_write_held_past_its_deadline_is_refused_and_not_applied(switch: Switch) -> None:
    group = E.update(INSERT, E.group(2, 1))
    with pushing(switch, SLOW_ACTIVATE, cookie=2):
        assert switch.dataplane.activating.wait(WAIT)  # the switch-over holds the lock
        with pytest.raises(grpc.RpcError) as caught:
            switch.client.stub.Write(write_request(switch.client, group), timeout=DEADLINE)
        assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    # the server gives up on it too (or, as p4switch once did, applies it once the lock frees)
    wait_until(lambda: expired(switch) == 1 or groups(switch.client) != [])
    assert groups(switch.client) == []  # the expired write did nothing
    switch.client.write(group)  # the next install goes through: nothing was left behind
    assert groups(switch.client) == [2]


def test_a_pipeline_whose_deadline_passes_while_it_loads_is_not_committed(
    switch: Switch,
) -> None:
    request = p4runtime_pb2.SetForwardingPipelineConfigRequest(
        device_id=1, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
    )
    request.election_id.low = 10
    request.config.p4info.CopyFrom(switch.p4info)
    request.config.p4_device_config = SLOW_LOAD
    request.config.cookie.cookie = 3
    with pytest.raises(grpc.RpcError) as caught:
        switch.client.stub.SetForwardingPipelineConfig(request, timeout=DEADLINE)
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert switch.dataplane.loading.is_set()
    switch.dataplane.release.set()
    wait_until(lambda: expired(switch) == 1 or cookie(switch) != 1)
    assert cookie(switch) == 1  # the old pipeline is still the one configured


def test_writes_and_reads_go_on_while_a_program_loads(switch: Switch) -> None:
    with pushing(switch, SLOW_LOAD, cookie=4) as outcome:
        assert switch.dataplane.loading.wait(WAIT)
        request = write_request(switch.client, E.update(INSERT, E.group(5, 1)))
        switch.client.stub.Write(request, timeout=WAIT)  # the load holds no lock writes need
        read = p4runtime_pb2.ReadRequest(device_id=1, entities=[E.entity(E.group(0))])
        assert len([r for r in switch.client.stub.Read(read, timeout=WAIT)]) == 1
        assert not switch.dataplane.release.is_set() and not outcome  # still loading
    assert "reply" in outcome  # the new program then went in, with its own fresh state
    assert cookie(switch) == 4
    assert groups(switch.client) == []


def test_a_request_whose_deadline_passed_before_it_is_handled_is_refused(
    switch: Switch,
) -> None:
    request = write_request(switch.client, E.update(INSERT, E.group(6, 1)))
    with pytest.raises(P4RTError) as caught:
        switch.server.write(request, deadline=0.0)  # an instant long gone
    assert caught.value.code == code_pb2.DEADLINE_EXCEEDED
    assert groups(switch.client) == []
