"""Idle timeouts (v1model's `support_timeout = true`): P4Info, hits stamped by both back ends,
the sweep that finds idle entries and how often it reports one, and the P4Runtime side over
real gRPC (idle_timeout_ns written and read, time_since_last_hit, IdleTimeoutNotification).

The program is tutorials/flowcache_idle.p4, shaped like the p4lang tutorial `flowcache`. Time
is a simulated clock (nanoseconds for the state, which the data plane stamps hits with)."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch import native
from p4switch import runtime as rt
from p4switch.exceptions import P4CompileError
from p4switch.p4rt import LoadedProgram, P4RuntimeServer
from p4switch.program import CompiledProgram, compile_file
from tests.clock import FakeClock
from tests.p4rt.fixtures.p4rt_client import Client, code_names, write_errors

TUTORIALS = Path(__file__).parent / "tutorials"
TABLE = "FlowIngress.flow_cache"
CACHED = "FlowIngress.cached_action"
CPU_PORT = 510
SECOND = 10**9
TCP, UDP = 6, 17
H1, H2, H3 = 0x0A000101, 0x0A000202, 0x0A000303
MAC = 0x080000000222
IDLE = p4runtime_pb2.TableEntry.IdleTimeout()  # in a read: give time_since_last_hit


class NanoClock:
    """A FakeClock read in nanoseconds, as the state's clock is."""

    def __init__(self) -> None:
        self.seconds = FakeClock(100.0)

    def __call__(self) -> int:
        return round(self.seconds() * SECOND)

    def advance(self, seconds: float) -> None:
        self.seconds.advance(seconds)


def program() -> CompiledProgram:
    return compile_file(TUTORIALS / "flowcache_idle.p4")


def frame(src: int, dst: int, proto: int = TCP) -> bytes:
    ip = struct.pack("!BBHIBBHII", 0x45, 0, 20, 0, 64, proto, 0, src, dst)
    return bytes.fromhex("020000000001") + bytes.fromhex("020000000002") + b"\x08\x00" + ip


def flow(src: int, dst: int, proto: int = TCP) -> tuple[rt.FieldMatch, ...]:
    return rt.exact(proto, 8), rt.exact(src, 32), rt.exact(dst, 32)


def install(state: rt.SwitchState, src: int, dst: int, timeout_s: float) -> rt.TableEntry:
    entry = rt.TableEntry(flow(src, dst), rt.ActionCall(CACHED, (2, MAC)))
    entry.idle_timeout_ns = round(timeout_s * SECOND)
    with state.lock:  # as the control plane writes: a native data path takes it on release
        state.table(TABLE).insert(entry)
    return entry


# --- the front end and P4Info -------------------------------------------------------------

SMALL = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct hs { h_t h; }
struct m { }
parser P(packet_in p, out hs h, inout m mm, inout standard_metadata_t s) {
    state start { p.extract(h.h); transition accept; }
}
control VC(inout hs h, inout m mm) { apply { } }
control I(inout hs h, inout m mm, inout standard_metadata_t s) {
    action fwd(bit<9> p) { s.egress_spec = p; }
    table t { key = { h.h.a : exact; } actions = { fwd; NoAction; } PROPERTY }
    apply { t.apply(); }
}
control E(inout hs h, inout m mm, inout standard_metadata_t s) { apply { } }
control C(inout hs h, inout m mm) { apply { } }
control D(packet_out p, in hs h) { apply { p.emit(h.h); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
"""


def small(tmp_path: Path, prop: str, annotation: str = "") -> CompiledProgram:
    source = SMALL.replace("PROPERTY", prop).replace("table t", f"{annotation} table t")
    (tmp_path / "small.p4").write_text(source)
    return compile_file(tmp_path / "small.p4")


def behavior(tmp_path: Path, prop: str, annotation: str = "") -> int:
    (table,) = small(tmp_path, prop, annotation).p4info.tables
    return table.idle_timeout_behavior


def test_support_timeout_is_notify_control_in_p4info_as_p4c_writes_it(tmp_path: Path) -> None:
    """p4c: `support_timeout = true` is NOTIFY_CONTROL; false, none, or the annotation (which
    p4c keeps as an annotation only) is NO_TIMEOUT."""
    (table,) = program().p4info.tables
    assert table.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL
    assert behavior(tmp_path, "support_timeout = true;") == p4info_pb2.Table.NOTIFY_CONTROL
    assert behavior(tmp_path, "support_timeout = false;") == p4info_pb2.Table.NO_TIMEOUT
    assert behavior(tmp_path, "") == p4info_pb2.Table.NO_TIMEOUT
    assert behavior(tmp_path, "", "@support_timeout(true)") == p4info_pb2.Table.NO_TIMEOUT


def test_support_timeout_takes_a_boolean(tmp_path: Path) -> None:
    with pytest.raises(P4CompileError, match="support_timeout takes true or false"):
        behavior(tmp_path, "support_timeout = 1;")


# --- the data plane: hits, on both back ends ------------------------------------------------


@pytest.mark.usefixtures("backend")
def test_a_hit_refreshes_the_entry_and_the_sweep_reports_the_idle_one() -> None:
    """Two flows installed with a 10 s idle timeout; one is hit 6 s later. At 12 s the sweep
    reports the other only; as BMv2's ageing monitor, a sweep skips an entry the sweep before
    reported, so an entry that stays idle is reported every second sweep."""
    clock = NanoClock()
    compiled = program()
    state = compiled.new_state(clock)
    pipe = compiled.pipeline(state, cpu_port=CPU_PORT)
    busy = install(state, H1, H2, 10)
    idle = install(state, H1, H3, 10)
    assert busy.last_hit == idle.last_hit == clock()  # inserted: idle from now on
    clock.advance(6)
    out = list(pipe.process(1, frame(H1, H2)))
    assert [port for port, _ in out] == [2]
    assert busy.last_hit == clock() and idle.last_hit == clock() - 6 * SECOND
    monitor = rt.AgeingMonitor(state)
    clock.advance(6)
    assert [(found.table, found.entries) for found in monitor.sweep()] == [(TABLE, (idle,))]
    assert monitor.sweep() == []  # reported by the sweep before
    assert [found.entries for found in monitor.sweep()] == [(idle,)]
    assert idle in state.table(TABLE).entries()  # told, not deleted
    clock.advance(5)  # the busy one's 10 s have passed too
    assert [found.entries for found in monitor.sweep()] == [(busy,)]


@pytest.mark.usefixtures("backend")
def test_a_miss_and_a_timeout_of_zero_age_nothing() -> None:
    clock = NanoClock()
    compiled = program()
    state = compiled.new_state(clock)
    pipe = compiled.pipeline(state, cpu_port=CPU_PORT)
    never = install(state, H1, H2, 0)
    clock.advance(1)
    out = list(pipe.process(1, frame(H2, H1)))  # no entry: the default sends it to the CPU
    assert [port for port, _ in out] == [CPU_PORT]
    clock.advance(3600)
    assert never.last_hit == clock() - 3601 * SECOND
    assert rt.AgeingMonitor(state).sweep() == []


@pytest.mark.usefixtures("backend")
def test_tables_without_support_timeout_record_no_hits(tmp_path: Path) -> None:
    compiled = small(tmp_path, "")
    state = compiled.new_state()
    entry = rt.TableEntry((rt.exact(7, 8),), rt.ActionCall("I.fwd", (2,)))
    state.table("I.t").insert(entry)
    assert list(compiled.pipeline(state).process(1, b"\x07")) == [(2, b"\x07")]
    assert entry.last_hit is None


def test_the_native_loop_gives_its_hits_back_to_the_sweep(tmp_path: Path) -> None:
    """Frames the native I/O loop runs in C: their hits are stamped when the state's lock is
    next taken, as the sweep takes it."""
    reason = native.available()
    if reason is not None:
        pytest.skip(f"native back end: {reason}")
    from p4switch.nativeio import NativeSwitch
    from p4switch.ports import Port

    clock = NanoClock()
    compiled = program()
    state = compiled.new_state(clock)
    pipe = compiled.pipeline(state, cpu_port=CPU_PORT, backend="native")
    busy = install(state, H1, H2, 10)
    idle = install(state, H1, H3, 10)
    pairs = {n: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM) for n in (1, 2)}
    for mine, _ in pairs.values():
        mine.setblocking(False)
    ports = {n: Port(name=f"pair{n}", ifindex=0, sock=mine) for n, (mine, _) in pairs.items()}
    switch = NativeSwitch(ports, pipe, cpu_port=CPU_PORT)
    stop = threading.Event()
    thread = threading.Thread(target=switch.run, args=(stop,))
    thread.start()
    try:
        clock.advance(6)
        pairs[1][1].send(frame(H1, H2))
        pairs[2][1].settimeout(10.0)  # a hang guard
        assert pairs[2][1].recv(2048)[:6] == MAC.to_bytes(6, "big")
        clock.advance(6)
        found = rt.AgeingMonitor(state).sweep()
        assert [f.entries for f in found] == [(idle,)]
        assert busy.last_hit == clock()  # stamped when the sweep took the lock
    finally:
        stop.set()
        switch.wake()
        thread.join(timeout=5)
        switch.close()
        for mine, theirs in pairs.values():
            mine.close()
            theirs.close()


# --- P4Runtime, over gRPC -------------------------------------------------------------------


class Served:
    def __init__(self, sweep_interval: float | None = None) -> None:
        self.clock = NanoClock()
        self.compiled = program()
        self.state = self.compiled.new_state(self.clock)
        self.pipe = self.compiled.pipeline(self.state, cpu_port=CPU_PORT)
        initial = LoadedProgram(self.compiled.p4info, b"", self.state, lambda: None)
        self.server = P4RuntimeServer(
            device_id=1,
            loader=self.load,
            send_packet_out=lambda f: None,
            initial=initial,
            cpu_port=CPU_PORT,
            idle_sweep_interval=sweep_interval,  # None: the test sweeps, after moving the clock
        )
        self.client = Client(self.server.start("127.0.0.1:0"), 10)
        info = self.compiled.p4info
        self.table = next(t for t in info.tables if t.preamble.name == TABLE)
        self.action = next(a for a in info.actions if a.preamble.name == CACHED)

    def load(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> LoadedProgram:
        """The same program pushed again: a fresh state on the same clock."""
        self.state = self.compiled.new_state(self.clock)
        self.pipe = self.compiled.pipeline(self.state, cpu_port=CPU_PORT)
        return LoadedProgram(p4info, device_config, self.state, lambda: None)

    def entry(self, src: int, dst: int, timeout_s: float = 0) -> p4runtime_pb2.TableEntry:
        entry = p4runtime_pb2.TableEntry(table_id=self.table.preamble.id)
        for field_id, value, width in ((1, TCP, 1), (2, src, 4), (3, dst, 4)):
            entry.match.add(field_id=field_id).exact.value = value.to_bytes(width, "big")
        entry.idle_timeout_ns = round(timeout_s * SECOND)
        return entry

    def insert(self, entry: p4runtime_pb2.TableEntry, utype: int = p4runtime_pb2.Update.INSERT):
        with_action = p4runtime_pb2.TableEntry()
        with_action.CopyFrom(entry)
        call = with_action.action.action
        call.action_id = self.action.preamble.id
        call.params.add(param_id=1, value=b"\x02")
        call.params.add(param_id=2, value=MAC.to_bytes(6, "big"))
        update = p4runtime_pb2.Update(type=utype)
        update.entity.table_entry.CopyFrom(with_action)
        self.client.write(update)

    def refused(
        self, entry: p4runtime_pb2.TableEntry, utype: int = p4runtime_pb2.Update.INSERT
    ) -> list[str]:
        with pytest.raises(grpc.RpcError) as caught:
            self.insert(entry, utype)
        return code_names(write_errors(caught.value))

    def read(self, **query: object) -> list[p4runtime_pb2.TableEntry]:
        wanted = p4runtime_pb2.TableEntry(table_id=self.table.preamble.id, **query)
        found = self.client.read(p4runtime_pb2.Entity(table_entry=wanted))
        return [e.table_entry for e in found]

    def close(self) -> None:
        self.client.close()
        self.server.stop(grace=0.5)


@pytest.fixture
def served(backend: str) -> Iterator[Served]:
    switch = Served()
    try:
        switch.client.arbitrate()
        yield switch
    finally:
        switch.close()


def test_idle_timeout_notification_end_to_end(served: Served) -> None:
    """The flowcache controller's loop: flows installed with idle_timeout_ns, one of them hit,
    the clock moved on: the primary is told of the idle one only, with its key and timeout,
    and the entry stays until the controller deletes it."""
    busy, idle = served.entry(H1, H2, 3), served.entry(H1, H3, 3)
    served.insert(busy)
    served.insert(idle)
    served.clock.advance(2)
    assert [p for p, _ in served.pipe.process(1, frame(H1, H2))] == [2]
    served.clock.advance(2)
    assert served.server.sweep_idle() == 1
    told = served.client.next("idle_timeout_notification").idle_timeout_notification
    assert told.timestamp > 0
    assert list(told.table_entry) == [idle]
    assert len(served.read()) == 2  # not deleted
    assert served.server.sweep_idle() == 0  # BMv2: not again at the next sweep
    assert served.server.sweep_idle() == 1  # but at the one after
    served.client.next("idle_timeout_notification")
    delete = p4runtime_pb2.Update(type=p4runtime_pb2.Update.DELETE)
    delete.entity.table_entry.CopyFrom(idle)
    served.client.write(delete)
    served.clock.advance(10)
    assert served.server.sweep_idle() == 1  # only the busy one now
    told = served.client.next("idle_timeout_notification").idle_timeout_notification
    assert list(told.table_entry) == [busy]


def test_reads_give_the_timeout_and_the_time_since_the_last_hit(served: Served) -> None:
    served.insert(served.entry(H1, H2, 3))
    served.insert(served.entry(H1, H3))  # no timeout: never told, but its hits are kept
    served.clock.advance(1.5)
    served.pipe.process(1, frame(H1, H3))
    served.clock.advance(0.25)
    plain = {e.match[2].exact.value: e for e in served.read()}
    assert [e.idle_timeout_ns for e in plain.values()] == [3 * SECOND, 0]
    assert not any(e.HasField("time_since_last_hit") for e in plain.values())
    timed = served.read(time_since_last_hit=IDLE)
    elapsed = {e.match[2].exact.value: e.time_since_last_hit.elapsed_ns for e in timed}
    assert elapsed == {
        H2.to_bytes(4, "big"): round(1.75 * SECOND),
        H3.to_bytes(4, "big"): round(0.25 * SECOND),
    }


def test_modify_changes_the_timeout(served: Served) -> None:
    entry = served.entry(H1, H2, 3)
    served.insert(entry)
    entry.idle_timeout_ns = 60 * SECOND
    served.insert(entry, p4runtime_pb2.Update.MODIFY)
    assert [e.idle_timeout_ns for e in served.read()] == [60 * SECOND]
    served.clock.advance(10)
    assert served.server.sweep_idle() == 0
    entry.idle_timeout_ns = 0  # as PI: a MODIFY without one stops the ageing
    served.insert(entry, p4runtime_pb2.Update.MODIFY)
    served.clock.advance(100)
    assert served.server.sweep_idle() == 0
    assert [e.idle_timeout_ns for e in served.read()] == [0]


def test_refusals_are_pi_s(served: Served) -> None:
    """PI's answers: a negative timeout, time_since_last_hit in a write, a timeout for the
    default entry, time_since_last_hit asked of the default entry."""
    assert served.refused(served.entry(H1, H2, -1)) == ["INVALID_ARGUMENT"]
    hit = served.entry(H1, H2, 3)
    hit.time_since_last_hit.elapsed_ns = 5
    assert served.refused(hit) == ["INVALID_ARGUMENT"]
    default = p4runtime_pb2.TableEntry(table_id=served.table.preamble.id, is_default_action=True)
    default.idle_timeout_ns = SECOND
    assert served.refused(default, p4runtime_pb2.Update.MODIFY) == ["INVALID_ARGUMENT"]
    with pytest.raises(grpc.RpcError) as caught:
        served.read(is_default_action=True, time_since_last_hit=IDLE)
    assert code_names(write_errors(caught.value)) == ["INVALID_ARGUMENT"]
    assert served.read() == []


def test_the_server_sweeps_by_itself() -> None:
    """The sweeping thread (here every 10 ms of real time) reports what the simulated clock
    makes idle; the test only waits for the message, with a hang guard."""
    served = Served(sweep_interval=0.01)
    try:
        served.client.arbitrate()
        entry = served.entry(H1, H2, 1)
        served.insert(entry)
        served.clock.advance(2)
        told = served.client.next("idle_timeout_notification").idle_timeout_notification
        assert list(told.table_entry) == [entry]
    finally:
        served.close()


def test_reconcile_and_commit_keeps_the_timeouts_and_the_last_hits(served: Served) -> None:
    """The program pushed again with RECONCILE_AND_COMMIT: the entries keep their timeouts
    and the time they were last hit, and the new pipeline is the one swept."""
    busy, idle = served.entry(H1, H2, 3), served.entry(H1, H3, 3)
    served.insert(busy)
    served.insert(idle)
    served.clock.advance(2)
    served.pipe.process(1, frame(H1, H2))
    request = p4runtime_pb2.SetForwardingPipelineConfigRequest
    served.client.set_pipeline(served.compiled.p4info, b"", request.RECONCILE_AND_COMMIT)
    assert [e.idle_timeout_ns for e in served.read()] == [3 * SECOND] * 2
    served.clock.advance(2)
    assert served.server.sweep_idle() == 1
    told = served.client.next("idle_timeout_notification").idle_timeout_notification
    assert list(told.table_entry) == [idle]
    served.pipe.process(1, frame(H1, H3))  # the new pipeline's hits count
    served.clock.advance(2.5)
    assert served.server.sweep_idle() == 1
    told = served.client.next("idle_timeout_notification").idle_timeout_notification
    assert list(told.table_entry) == [busy]
    assert served.server.sweep_idle() == 0  # the one hit is not idle; the other was just told
