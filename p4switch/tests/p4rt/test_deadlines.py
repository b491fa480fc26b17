"""Client deadlines: work whose deadline has passed is refused and leaves no trace; a program
being loaded holds no lock that writes and reads need.

When a deadline has passed is decided on a simulated clock (`FakeClock`, the server's `clock`):
the tests move it past a deadline, or keep it short of one, and nothing depends on how fast the
machine is. Waits on the real clock are hang guards (`WAIT`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import grpc
import pytest
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import P4RTError
from p4switch.p4rt import LoadedProgram, P4RuntimeServer
from p4switch.p4rt.deadline import acquired, check_deadline
from p4switch.p4rt.service import P4RuntimeService
from tests.clock import FakeClock
from tests.p4rt.fixtures import entities as E
from tests.p4rt.fixtures.fake_program import FakeDataPlane, load_p4info
from tests.p4rt.fixtures.p4rt_client import WAIT, Client, wait_until

SLOW_LOAD = b"// compiles until the test lets it"
SLOW_ACTIVATE = b"// switches over until the test lets it"
INSERT = p4runtime_pb2.Update.INSERT
START = 100.0  # the simulated clock's reading when a test begins


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
    clock: FakeClock


@pytest.fixture
def switch() -> Iterator[Switch]:
    """A server whose deadlines are instants on a simulated clock, and its primary client."""
    dataplane = HeldDataPlane()
    clock = FakeClock(START)
    server = P4RuntimeServer(
        device_id=1, loader=dataplane.load, send_packet_out=dataplane.send_packet_out, clock=clock
    )
    port = server.start("127.0.0.1:0")
    client = Client(port, 10)
    try:
        client.arbitrate()
        p4info = load_p4info()
        client.set_pipeline(p4info, cookie=1)
        yield Switch(server, dataplane, client, p4info, clock)
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


def in_thread(call, *args: object, **kwargs: object) -> tuple[threading.Thread, dict[str, object]]:
    """Run `call` on a thread of its own; its result or its error's code lands in the dict."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["result"] = call(*args, **kwargs)
        except P4RTError as err:
            outcome["code"] = err.code
        except grpc.RpcError as err:
            outcome["status"] = err.code()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def finished(thread: threading.Thread) -> None:
    thread.join(WAIT)
    assert not thread.is_alive(), "the call never returned"


# --- when a deadline has passed, on the clock it is an instant of ----------------------------


def test_a_deadline_passes_when_the_clock_reaches_it() -> None:
    clock = FakeClock(START)
    check_deadline(None, "no deadline", clock)
    check_deadline(START + 1.0, "a second to go", clock)
    clock.now = math.nextafter(START + 1.0, 0.0)
    check_deadline(START + 1.0, "the last instant before it", clock)
    clock.now = START + 1.0
    with pytest.raises(P4RTError, match="deadline passed: at it") as caught:
        check_deadline(START + 1.0, "at it", clock)
    assert caught.value.code == code_pb2.DEADLINE_EXCEEDED


def holder(lock: threading.Lock, clock: FakeClock, entered: list[float]) -> Callable[[], None]:
    """A call that holds `lock` under a deadline 1 s after START, noting when it got in."""

    def hold() -> None:
        with acquired(lock, START + 1.0, "waiting", clock):
            entered.append(clock())

    return hold


def test_a_lock_wait_ends_when_the_clock_passes_the_deadline_and_the_lock_is_not_taken() -> None:
    clock, lock, entered = FakeClock(START), threading.Lock(), []
    hold = holder(lock, clock, entered)
    with lock:  # held by the test throughout
        waiter, outcome = in_thread(hold)
        clock.now = START + 1.0
        finished(waiter)
    assert outcome == {"code": code_pb2.DEADLINE_EXCEEDED} and entered == []
    assert lock.acquire(blocking=False)  # the refused wait left the lock free


def test_a_lock_freed_before_the_deadline_is_taken_and_one_freed_as_it_passes_is_not() -> None:
    clock, lock, entered = FakeClock(START), threading.Lock(), []
    hold = holder(lock, clock, entered)
    lock.acquire()
    waiter, outcome = in_thread(hold)
    lock.release()  # the clock has not moved: in time, however long the wait took for real
    finished(waiter)
    assert outcome == {"result": None} and entered == [START]
    lock.acquire()
    waiter, outcome = in_thread(hold)
    clock.now = START + 1.0  # the deadline passes, and then the lock is free: refused either way
    lock.release()
    finished(waiter)
    assert outcome == {"code": code_pb2.DEADLINE_EXCEEDED} and entered == [START]


# --- the server ------------------------------------------------------------------------------


def test_a_request_whose_deadline_passed_before_it_is_handled_is_refused(
    switch: Switch,
) -> None:
    request = write_request(switch.client, E.update(INSERT, E.group(6, 1)))
    with pytest.raises(P4RTError) as caught:
        switch.server.write(request, deadline=START)  # the clock reads START: it has passed
    assert caught.value.code == code_pb2.DEADLINE_EXCEEDED
    assert groups(switch.client) == [] and expired(switch) == 1
    switch.server.write(request, deadline=math.nextafter(START, math.inf))  # still to come
    assert groups(switch.client) == [6]


def slow_pipeline(switch: Switch) -> p4runtime_pb2.SetForwardingPipelineConfigRequest:
    """A VERIFY_AND_COMMIT of a program that loads until the test lets it, with cookie 3."""
    request = p4runtime_pb2.SetForwardingPipelineConfigRequest(
        device_id=1, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
    )
    request.election_id.low = 10
    request.config.p4info.CopyFrom(switch.p4info)
    request.config.p4_device_config = SLOW_LOAD
    request.config.cookie.cookie = 3
    return request


def test_a_pipeline_whose_deadline_passes_while_it_loads_is_not_committed(
    switch: Switch,
) -> None:
    pusher, outcome = in_thread(switch.server.set_pipeline, slow_pipeline(switch), START + 1.0)
    assert switch.dataplane.loading.wait(WAIT)
    switch.clock.now = START + 1.0  # the deadline passes while the program loads
    switch.dataplane.release.set()
    finished(pusher)
    assert outcome == {"code": code_pb2.DEADLINE_EXCEEDED}
    assert cookie(switch) == 1 and expired(switch) == 1  # the old pipeline is still configured


def test_a_pipeline_loaded_before_its_deadline_is_committed(switch: Switch) -> None:
    pusher, outcome = in_thread(switch.server.set_pipeline, slow_pipeline(switch), START + 1.0)
    assert switch.dataplane.loading.wait(WAIT)
    switch.clock.now = math.nextafter(START + 1.0, 0.0)  # the last instant before it
    switch.dataplane.release.set()
    finished(pusher)
    assert outcome == {"result": None}
    assert cookie(switch) == 3 and expired(switch) == 0


# --- over gRPC -------------------------------------------------------------------------------


class Context:
    """The part of a gRPC server context the service reads for a unary call."""

    def __init__(self, remaining: float | None) -> None:
        self.remaining = remaining

    def time_remaining(self) -> float | None:
        return self.remaining


class Recorder:
    """A device that takes every write and read, and keeps the deadline each came with."""

    device_id = 1

    def __init__(self) -> None:
        self.deadlines: list[float | None] = []
        self.arbiter = self

    def is_primary(self, election_id: object) -> bool:
        return True

    def write(
        self, request: object, deadline: float | None = None, check_report: object = None
    ) -> list[None]:
        self.deadlines.append(deadline)
        return []

    def read(self, request: object, deadline: float | None = None) -> tuple[list, list]:
        self.deadlines.append(deadline)
        return [], []


def test_the_clients_deadline_becomes_an_instant_on_the_servers_clock() -> None:
    device = Recorder()
    service = P4RuntimeService(device, FakeClock(START))  # type: ignore[arg-type]
    write = p4runtime_pb2.WriteRequest(device_id=1)
    read = p4runtime_pb2.ReadRequest(device_id=1)
    service.Write(write, Context(0.25))  # type: ignore[arg-type]
    list(service.Read(read, Context(2.5)))  # type: ignore[arg-type]
    service.Write(write, Context(None))  # type: ignore[arg-type]
    service.Write(write, Context(3e9))  # type: ignore[arg-type]  # gRPC's way to say "none"
    assert device.deadlines == [START + 0.25, START + 2.5, None, None]


def test_a_write_held_past_its_grpc_deadline_is_refused_and_not_applied(switch: Switch) -> None:
    """The client's own gRPC deadline reaches the server, which refuses the write once its clock
    has passed it, while the lock the write waits for is still held: nothing can apply it."""
    group = E.update(INSERT, E.group(2, 1))
    with pushing(switch, SLOW_ACTIVATE, cookie=2):
        assert switch.dataplane.activating.wait(WAIT)  # the switch-over holds the lock
        request = write_request(switch.client, group)
        writer, outcome = in_thread(switch.client.stub.Write, request, timeout=WAIT)

        def refused() -> bool:
            switch.clock.advance(WAIT)  # past any deadline the client's WAIT can give
            return expired(switch) == 1

        wait_until(refused)
        finished(writer)
        assert outcome == {"status": grpc.StatusCode.DEADLINE_EXCEEDED}
    assert groups(switch.client) == []  # the expired write did nothing
    switch.client.write(group)  # the next install goes through: nothing was left behind
    assert groups(switch.client) == [2]


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
