"""InProcessSwitch: P4Runtime writes and reads in process, registers, counts, a caller's clock,
and the switch served over P4Runtime (real gRPC on loopback) to a controller under test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4switch import CompiledProgram, InProcessSwitch, P4SwitchError, compile_file
from tests.p4rt.fixtures.p4rt_client import Client, wait_until

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>

@controller_header("packet_out")
header packet_out_t { bit<9> egress_port; bit<7> _pad; }
header ethernet_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { ethernet_t ethernet; }
struct metadata_t { }

parser P(packet_in p, out headers_t hdr, inout metadata_t meta,
         inout standard_metadata_t sm) {
    state start { p.extract(hdr.ethernet); transition accept; }
}
control VC(inout headers_t hdr, inout metadata_t meta) { apply { } }
control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    register<bit<48>>(2) stamps;
    counter(1, CounterType.packets) seen;
    action forward(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    table dmac {
        key = { hdr.ethernet.dst: exact; }
        actions = { forward; drop; }
        default_action = drop();
    }
    apply {
        seen.count(0);
        stamps.write(0, sm.ingress_global_timestamp);
        dmac.apply();
    }
}
control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply { }
}
control CC(inout headers_t hdr, inout metadata_t meta) { apply { } }
control D(packet_out p, in headers_t hdr) { apply { p.emit(hdr.ethernet); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

DST = bytes.fromhex("020000000002")
FRAME = DST + bytes.fromhex("020000000001") + bytes.fromhex("0800") + bytes(46)
REGISTER, COUNTER, TABLE = "I.stamps", "I.seen", "I.dmac"


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> CompiledProgram:
    path = Path(tmp_path_factory.mktemp("inprocess")) / "stamps.p4"
    path.write_text(PROGRAM)
    return compile_file(path)


def _id(program: CompiledProgram, kind: str, name: str) -> int:
    found = [o.preamble.id for o in getattr(program.p4info, kind) if o.preamble.name == name]
    assert found, f"no {kind} {name}"
    return found[0]


def forward(program: CompiledProgram, port: int, dst: bytes = DST) -> p4runtime_pb2.Update:
    """INSERT dmac: dst -> forward(port)."""
    entry = p4runtime_pb2.TableEntry(table_id=_id(program, "tables", TABLE))
    entry.match.add(field_id=1).exact.value = dst
    call = entry.action.action
    call.action_id = _id(program, "actions", "I.forward")
    call.params.add(param_id=1, value=port.to_bytes(2, "big"))
    return p4runtime_pb2.Update(
        type=p4runtime_pb2.Update.INSERT, entity=p4runtime_pb2.Entity(table_entry=entry)
    )


def every_entry() -> p4runtime_pb2.Entity:
    return p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())


class Clock:
    def __init__(self) -> None:
        self.ns = 5_000_000_000

    def __call__(self) -> int:
        return self.ns


# --- in process ------------------------------------------------------------------------------


def test_writes_program_the_pipeline_and_reads_answer_as_p4runtime_does(
    program: CompiledProgram, backend: str
) -> None:
    switch = InProcessSwitch(program, backend)
    assert switch.process(1, FRAME) == []  # no entry: dropped
    switch.write([forward(program, 3)])
    assert switch.process(1, FRAME) == [(3, FRAME)]
    (entity,) = switch.read([every_entry()])
    assert entity.table_entry.match[0].exact.value == DST
    assert switch.counter(COUNTER) == [2]
    assert switch.counts() == {"drop.ingress": 1}  # the frame before the entry


def test_a_refused_read_names_the_query(program: CompiledProgram) -> None:
    switch = InProcessSwitch(program, "python")
    unknown = p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=0x0200FFFF))
    with pytest.raises(P4SwitchError, match=r"^read 1 of 2 refused: "):
        switch.read([every_entry(), unknown])


def test_the_clock_given_is_what_the_timestamps_count_on(
    program: CompiledProgram, backend: str
) -> None:
    clock = Clock()
    switch = InProcessSwitch(program, backend, clock=clock)
    switch.process(1, FRAME)
    clock.ns += 2_500_000  # 2.5 ms later
    switch.process(1, FRAME)
    assert switch.register(REGISTER) == [2500, 0]  # microseconds since the pipeline started
    assert switch.fresh().register(REGISTER) == [0, 0]  # a state of its own, the same clock


def test_counts_name_the_frames_the_parser_rejected(program: CompiledProgram) -> None:
    switch = InProcessSwitch(program, "python")
    switch.process(1, bytes(4))  # shorter than an Ethernet header: on to ingress, then dropped
    assert switch.counts() == {"parser_error.PacketTooShort": 1, "drop.ingress": 1}


# --- served over P4Runtime ---------------------------------------------------------------------


@pytest.fixture
def served(program: CompiledProgram) -> Iterator[tuple[InProcessSwitch, Client, list[bytes]]]:
    switch = InProcessSwitch(program, "python")
    packet_outs: list[bytes] = []
    port = switch.serve("127.0.0.1:0", packet_out=packet_outs.append)
    client = Client(port, election_id=10)
    try:
        assert client.arbitrate().status.code == code_pb2.OK
        yield switch, client, packet_outs
    finally:
        client.close()
        switch.stop(grace=0.2)


def test_a_served_switch_runs_what_its_client_writes(
    program: CompiledProgram, served: tuple[InProcessSwitch, Client, list[bytes]]
) -> None:
    switch, client, _ = served
    client.write(forward(program, 4))
    assert switch.process(1, FRAME) == [(4, FRAME)]
    switch.write([forward(program, 5, dst=bytes(6))])  # in process: the client reads it back
    assert len(client.read(every_entry())) == 2
    assert len(switch.read([every_entry()])) == 2


def test_a_push_of_its_own_program_starts_anew_and_another_is_refused(
    program: CompiledProgram, served: tuple[InProcessSwitch, Client, list[bytes]]
) -> None:
    switch, client, _ = served
    switch.write([forward(program, 4)])
    client.set_pipeline(program.p4info, b"the source")
    assert switch.process(1, FRAME) == []  # no entries: the push started the pipeline anew
    client.write(forward(program, 6))
    assert switch.process(1, FRAME) == [(6, FRAME)]
    other = type(program.p4info)()
    other.CopyFrom(program.p4info)
    other.tables[0].preamble.name = "I.other"
    with pytest.raises(grpc.RpcError) as caught:
        client.set_pipeline(other, b"another program")
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "runs the program it was made with" in str(caught.value.details())
    assert switch.process(1, FRAME) == [(6, FRAME)]  # refused: nothing changed


def test_packet_outs_go_to_the_callers_callback(
    served: tuple[InProcessSwitch, Client, list[bytes]],
) -> None:
    switch, client, packet_outs = served
    message = p4runtime_pb2.PacketOut(payload=b"\x01\x02\x03")
    message.metadata.add(metadata_id=1, value=b"\x00\x07")
    client.send(p4runtime_pb2.StreamMessageRequest(packet=message))
    wait_until(lambda: bool(packet_outs))
    assert packet_outs == [bytes.fromhex("0380") + b"\x01\x02\x03"]  # port 7, then padding
    assert switch.counter(COUNTER) == [0]  # not sent through the pipeline


class Counting(grpc.ServerInterceptor):
    """Counts the calls of each method it sees."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Any],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        method = handler_call_details.method.rsplit("/", 1)[-1]
        self.calls[method] = self.calls.get(method, 0) + 1
        return continuation(handler_call_details)


def test_interceptors_see_every_call_and_stop_keeps_the_state(program: CompiledProgram) -> None:
    switch = InProcessSwitch(program, "python")
    counting = Counting()
    port = switch.serve("127.0.0.1:0", device_id=3, interceptors=[counting])
    with pytest.raises(P4SwitchError, match="already served"):
        switch.serve("127.0.0.1:0")
    client = Client(port, election_id=1)
    try:
        client.arbitrate(device_id=3)
        request = p4runtime_pb2.WriteRequest(device_id=3, updates=[forward(program, 2)])
        request.election_id.low = 1
        client.stub.Write(request)
    finally:
        client.close()
        switch.stop(grace=0.2)
    assert counting.calls == {"StreamChannel": 1, "Write": 1}
    assert switch.process(1, FRAME) == [(2, FRAME)]  # served no more, programmed still
    again = switch.serve(f"127.0.0.1:{port}")  # the same port, once more
    try:
        assert again == port
        assert len(switch.read([every_entry()])) == 1
    finally:
        switch.stop(grace=0.2)
