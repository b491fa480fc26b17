"""Digests (v1model `digest<T>`), as BMv2 sends them through P4Runtime: the ingress control's
last digest of a packet, its values as they were at the call, batched into lists as DigestEntry
configures them, each value reported once until its list is acknowledged or the ack times out.
In process on a clock the test controls, and over P4Runtime (DigestEntry written and read back,
DigestList on the stream, DigestListAck). The python back end runs them; the native one refuses
them by name (the switch then runs python)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch import runtime as rt
from p4switch.exceptions import InvalidArgument, NativeUnsupported, P4CompileError
from p4switch.p4rt import LoadedProgram, P4RuntimeServer
from p4switch.program import CompiledProgram, compile_file
from tests.p4rt.fixtures.p4rt_client import (
    Client,
    code_names,
    serving,
    write_errors,
)

# A learning switch: a source not in `known` is reported (learn_t); an EtherType 0x88b5 frame
# is reported as note_t (after learn_t: the last digest of ingress is the one sent); a frame to
# 00:..:00 is dropped after its digest.
PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
struct headers { eth_t eth; }
struct learn_t { bit<48> src; bit<9> port; }
struct flags_t { bool broadcast; int<8> delta; }
struct note_t { bit<16> eth_type; flags_t flags; }
struct meta { learn_t learn; }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start { p.extract(h.eth); transition accept; }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    action learn() {
        m.learn.src = h.eth.src;
        m.learn.port = s.ingress_port;
        digest(1, m.learn);
    }
    table known {
        key = { h.eth.src: exact; }
        actions = { learn; NoAction; }
        default_action = learn();
    }
    apply {
        s.egress_spec = 1;
        known.apply();
        if (h.eth.eth_type == 0x88b5) {
            digest<note_t>(7, {h.eth.eth_type, {h.eth.dst == 0xffffffffffff, -3}});
        }
        m.learn.src = 0;
        if (h.eth.dst == 0) { mark_to_drop(s); }
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""
SECOND = 1_000_000_000
BROADCAST = 0xFFFFFFFFFFFF


class Clock:
    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> int:
        return self.ns


def compiled(tmp_path: Path, text: str = PROGRAM) -> CompiledProgram:
    path = tmp_path / "digests.p4"
    path.write_text(text)
    return compile_file(path)


def frame(src: int, dst: int = BROADCAST, eth_type: int = 0x0800) -> bytes:
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + eth_type.to_bytes(2, "big")


@pytest.fixture
def learning(tmp_path: Path):
    program = compiled(tmp_path)
    clock = Clock()
    state = program.new_state(clock)
    return state, program.pipeline(state), clock


def test_each_new_source_is_reported_once_until_acknowledged(learning) -> None:
    state, pipe, _ = learning
    digests = state.digests
    digests.configure("learn_t", rt.DigestConfig(max_list_size=1, ack_timeout_ns=10 * SECOND))
    for port, src in [(3, 0xA), (4, 0xB), (3, 0xA), (5, 0xA)]:
        pipe.process(port, frame(src))
    lists = digests.take_ready()
    # 0xA from port 3 is held until acknowledged; 0xA from port 5 is another value
    assert [(d.list_id, d.values) for d in lists] == [
        (1, ((0xA, 3),)),
        (2, ((0xB, 4),)),
        (3, ((0xA, 5),)),
    ]
    assert digests.counts["learn_t"].suppressed == 1
    digests.ack("learn_t", 1)
    pipe.process(3, frame(0xA))
    assert [d.values for d in digests.take_ready()] == [((0xA, 3),)]
    state.table("I.known").insert(
        rt.TableEntry((rt.exact(0xC, 48),), rt.ActionCall("NoAction", ()))
    )
    pipe.process(3, frame(0xC))  # known: no digest
    assert digests.take_ready() == [] and digests.counts["learn_t"].learned == 5


def test_values_are_taken_at_the_call_and_the_last_digest_of_ingress_is_sent(learning) -> None:
    state, pipe, _ = learning
    for name in ("learn_t", "note_t"):
        state.digests.configure(name, rt.DigestConfig())
    pipe.process(2, frame(0xA, dst=BROADCAST, eth_type=0x88B5))  # learn_t, then note_t
    pipe.process(2, frame(0xB, dst=5, eth_type=0x88B5))
    assert pipe.process(6, frame(0xD, dst=0)) == []  # dropped after its digest
    ready = state.digests.take_ready()
    by_name = {(d.digest, d.values) for d in ready}
    # m.learn.src = 0 after the call changes nothing; -3 as int<8> is 0xfd; true is 1
    assert by_name == {
        ("note_t", ((0x88B5, 1, 0xFD),)),
        ("note_t", ((0x88B5, 0, 0xFD),)),
        ("learn_t", ((0xD, 6),)),
    }
    assert state.digests.counts["learn_t"].learned == 1


def test_lists_fill_up_to_their_size_or_wait_out_the_timeout(learning) -> None:
    state, pipe, clock = learning
    digests = state.digests
    digests.configure("learn_t", rt.DigestConfig(max_timeout_ns=SECOND, max_list_size=3))
    for src in (1, 2):
        pipe.process(0, frame(src))
    assert digests.take_ready() == []  # two of three, and no time has passed
    pipe.process(0, frame(3))
    assert [d.values for d in digests.take_ready()] == [((1, 0), (2, 0), (3, 0))]
    pipe.process(0, frame(4))
    clock.ns += SECOND - 1
    assert digests.take_ready() == []
    clock.ns += 1
    assert [d.values for d in digests.take_ready()] == [((4, 0),)]
    digests.configure("learn_t", rt.DigestConfig(max_timeout_ns=SECOND, max_list_size=0))
    for src in range(5, 10):
        pipe.process(0, frame(src))  # no size limit: all wait for the timeout
    assert digests.take_ready() == []
    clock.ns += SECOND
    (one,) = digests.take_ready()
    assert len(one.values) == 5


def test_an_unacknowledged_list_times_out(learning) -> None:
    state, pipe, clock = learning
    digests = state.digests
    digests.configure("learn_t", rt.DigestConfig(ack_timeout_ns=2 * SECOND))
    pipe.process(1, frame(0xA))
    assert [d.list_id for d in digests.take_ready()] == [1]
    clock.ns += SECOND
    pipe.process(1, frame(0xA))  # still waiting for its ack
    assert digests.take_ready() == []
    clock.ns += SECOND
    digests.take_ready()  # the ack is overdue: the value is let go
    pipe.process(1, frame(0xA))
    assert [(d.list_id, d.values) for d in digests.take_ready()] == [(2, ((0xA, 1),))]
    assert digests.counts["learn_t"].expired == 1
    digests.ack("learn_t", 1)  # too late: ignored
    with pytest.raises(InvalidArgument, match="no list 9"):
        digests.ack("learn_t", 9)  # never sent


def test_without_an_ack_timeout_values_come_again_at_once(learning) -> None:
    state, pipe, _ = learning
    state.digests.configure("learn_t", rt.DigestConfig())
    for _ in range(3):
        pipe.process(1, frame(0xA))
        assert [d.values for d in state.digests.take_ready()] == [((0xA, 1),)]


def test_unconfigured_digests_are_counted_and_dropped(learning) -> None:
    state, pipe, clock = learning
    pipe.process(1, frame(0xA))
    assert state.digests.counts["learn_t"].unconfigured == 1
    state.digests.configure("learn_t", rt.DigestConfig(max_timeout_ns=SECOND, max_list_size=9))
    pipe.process(1, frame(0xB))
    state.digests.configure("learn_t", None)  # stopped: what was queued goes
    clock.ns += SECOND
    assert state.digests.take_ready() == []


def test_p4info_names_digests_after_their_struct_types(tmp_path: Path) -> None:
    info = compiled(tmp_path).p4info
    assert {d.preamble.name: d.type_spec.struct.name for d in info.digests} == {
        "learn_t": "learn_t",
        "note_t": "note_t",
    }
    assert all(d.preamble.id >> 24 == p4info_pb2.P4Ids.DIGEST for d in info.digests)
    structs = info.type_info.structs
    learn = [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in structs["learn_t"].members]
    assert learn == [("src", 48), ("port", 9)]
    flags = structs["flags_t"].members
    assert flags[0].type_spec.HasField("bool")
    assert flags[1].type_spec.bitstring.int.bitwidth == 8
    assert structs["note_t"].members[1].type_spec.struct.name == "flags_t"


def test_the_native_back_end_refuses_digests_by_name(tmp_path: Path) -> None:
    program = compiled(tmp_path)
    with pytest.raises(NativeUnsupported, match="digest"):
        program.pipeline(program.new_state(), backend="native")


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("digest(1, m.learn);", "digest(1, h.eth);", "digest data must be a struct"),
        ("digest(1, m.learn);", "digest(1, {src = h.eth.src});", "give the digest's struct type"),
        ("digest(1, m.learn);", "digest(1, {h.eth});", "holds bit<N>, int<N>, bool, error"),
        ("digest(1, m.learn);", "digest<note_t>(1, m.learn);", "digest<note_t> is given a"),
        ("digest(1, m.learn);", "digest<learn_t>(1, {h.eth.src});", "1 values for learn_t"),
        ("digest(1, m.learn);", "digest(1);", "takes 2 argument(s)"),
        (
            "struct learn_t { bit<48> src;",
            "struct learn_t { eth_t e; bit<48> src;",
            "digest field learn_t.e is a",
        ),
        (
            "p.extract(h.eth);",
            "p.extract(h.eth); digest(1, m.learn);",
            "digest cannot be called from a parser",
        ),
    ],
)
def test_what_digest_calls_refuse(tmp_path: Path, old: str, new: str, words: str) -> None:
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, PROGRAM.replace(old, new, 1))
    assert words in err.value.what and err.value.line > 0, err.value


def test_named_fields_in_a_digest_value(tmp_path: Path) -> None:
    text = PROGRAM.replace(
        "digest(1, m.learn);", "digest<learn_t>(1, {port = s.ingress_port, src = h.eth.src});"
    )
    program = compiled(tmp_path, text)
    state = program.new_state()
    state.digests.configure("learn_t", rt.DigestConfig())
    program.pipeline(state).process(4, frame(0xE))
    assert [d.values for d in state.digests.take_ready()] == [((0xE, 4),)]


# --- over P4Runtime ----------------------------------------------------------------------------


@pytest.fixture
def switch(tmp_path: Path) -> Iterator[tuple[Client, CompiledProgram, object]]:
    program = compiled(tmp_path)
    state = program.new_state()
    with serving(program, PROGRAM, state) as client:
        yield client, program, program.pipeline(state)


def digest_id(program: CompiledProgram, name: str) -> int:
    return next(d.preamble.id for d in program.p4info.digests if d.preamble.name == name)


def digest_update(program, utype, name="learn_t", **config) -> p4runtime_pb2.Update:
    update = p4runtime_pb2.Update(type=utype)
    entry = update.entity.digest_entry
    entry.digest_id = digest_id(program, name)
    if config:
        entry.config.CopyFrom(p4runtime_pb2.DigestEntry.Config(**config))
    return update


INSERT, MODIFY, DELETE = (
    p4runtime_pb2.Update.INSERT,
    p4runtime_pb2.Update.MODIFY,
    p4runtime_pb2.Update.DELETE,
)


def ack(client: Client, did: int, list_id: int) -> None:
    client.send(
        p4runtime_pb2.StreamMessageRequest(
            digest_ack=p4runtime_pb2.DigestListAck(digest_id=did, list_id=list_id)
        )
    )


def test_digest_lists_over_p4runtime(switch) -> None:
    client, program, pipe = switch
    did = digest_id(program, "learn_t")
    client.write(digest_update(program, INSERT, max_list_size=1, ack_timeout_ns=60 * SECOND))
    read = p4runtime_pb2.Entity()
    read.digest_entry.digest_id = 0
    (back,) = client.read(read)
    assert back.digest_entry.digest_id == did
    assert back.digest_entry.config.ack_timeout_ns == 60 * SECOND
    assert back.digest_entry.config.max_list_size == 1
    pipe.process(3, frame(0x020000000001))
    msg = client.next("digest").digest
    assert (msg.digest_id, msg.list_id) == (did, 1) and msg.timestamp > 0
    (data,) = msg.data
    members = [m.bitstring for m in data.struct.members]
    assert members == [bytes.fromhex("020000000001"), b"\x03"]  # canonical binary strings
    pipe.process(3, frame(0x020000000001))  # held: not acknowledged yet
    pipe.process(4, frame(0x020000000002))
    second = client.next("digest").digest
    assert second.list_id == 2 and second.data[0].struct.members[1].bitstring == b"\x04"
    ack(client, did, 1)
    # the ack goes on the stream, a write on an RPC of its own: the server may take them in
    # either order. An arbitration update on the same stream is answered after the ack is in
    client.arbitrate()
    client.write(digest_update(program, MODIFY, max_list_size=1))  # a write after the ack
    pipe.process(3, frame(0x020000000001))  # reported again once acknowledged
    assert client.next("digest").digest.list_id == 3


def test_bools_and_signed_values_over_p4runtime(switch) -> None:
    client, program, pipe = switch
    client.write(digest_update(program, INSERT, "note_t", max_list_size=1))
    pipe.process(1, frame(0xA, eth_type=0x88B5))
    (data,) = client.next("digest").digest.data
    eth_type, flags = data.struct.members
    assert eth_type.bitstring == b"\x88\xb5"
    assert flags.struct.members[0].bool is True
    assert flags.struct.members[1].bitstring == b"\xfd"  # -3: shortest two's complement


def test_deleting_a_digest_entry_stops_its_lists(switch) -> None:
    client, program, pipe = switch
    client.write(digest_update(program, INSERT, max_timeout_ns=60 * SECOND, max_list_size=5))
    pipe.process(1, frame(0xA))
    client.write(digest_update(program, DELETE))
    read = p4runtime_pb2.Entity()
    read.digest_entry.digest_id = digest_id(program, "learn_t")
    assert client.read(read) == []
    client.write(digest_update(program, INSERT, max_list_size=1))
    pipe.process(1, frame(0xB))
    (data,) = client.next("digest").digest.data  # 0xA went with the old entry
    assert data.struct.members[0].bitstring == b"\x0b"


@pytest.mark.parametrize(
    ("updates", "code", "words"),
    [
        (
            lambda p: [digest_update(p, INSERT, max_list_size=1)] * 2,
            "ALREADY_EXISTS",
            "configured already",
        ),
        (lambda p: [digest_update(p, MODIFY, max_list_size=1)], "NOT_FOUND", "not configured"),
        (lambda p: [digest_update(p, DELETE)], "NOT_FOUND", "not configured"),
        (lambda p: [digest_update(p, INSERT)], "INVALID_ARGUMENT", "has no config"),
        (
            lambda p: [digest_update(p, INSERT, max_list_size=-1)],
            "INVALID_ARGUMENT",
            "cannot be negative",
        ),
    ],
)
def test_what_digest_entry_writes_refuse(switch, updates, code: str, words: str) -> None:
    client, program, _ = switch
    batch = updates(program)
    if len(batch) > 1:
        client.write(*batch[:-1])
    with pytest.raises(grpc.RpcError) as caught:
        client.write(batch[-1])
    errors = write_errors(caught.value)
    assert code_names(errors) == [code] and words in errors[0].message


def test_an_unknown_digest_id_is_not_found(switch) -> None:
    client, _, _ = switch
    update = p4runtime_pb2.Update(type=INSERT)
    update.entity.digest_entry.digest_id = 0x17000001
    update.entity.digest_entry.config.max_list_size = 1
    with pytest.raises(grpc.RpcError) as caught:
        client.write(update)
    assert code_names(write_errors(caught.value)) == ["NOT_FOUND"]


def test_bad_acks_get_stream_errors(switch) -> None:
    client, program, _ = switch
    ack(client, digest_id(program, "learn_t"), 5)  # no list 5 was sent
    error = client.next("error").error
    assert error.canonical_code == code_pb2.INVALID_ARGUMENT
    assert error.digest_list_ack.digest_list_ack.list_id == 5
    ack(client, 0x17000001, 1)
    assert client.next("error").error.canonical_code == code_pb2.NOT_FOUND


def test_a_pipeline_set_over_p4runtime_streams_its_digests(tmp_path: Path) -> None:
    program = compiled(tmp_path)
    states = []

    def load(p4info, source):
        states.append(program.new_state())
        return LoadedProgram(program.p4info, source, states[-1], lambda: None)

    server = P4RuntimeServer(device_id=1, loader=load, send_packet_out=lambda f: None)
    client = Client(server.start("127.0.0.1:0"), 10)
    try:
        client.arbitrate()
        for _ in range(2):  # the second pipeline replaces the first one's digests
            client.set_pipeline(program.p4info, PROGRAM.encode())
            client.write(digest_update(program, INSERT, max_list_size=1))
            program.pipeline(states[-1]).process(2, frame(0xA))
            assert client.next("digest").digest.list_id == 1
        program.pipeline(states[0]).process(2, frame(0xB))  # no longer streamed
        assert states[0].digests.counts["learn_t"].learned == 2
        client.write(digest_update(program, MODIFY, max_list_size=1))
        program.pipeline(states[1]).process(3, frame(0xC))
        (data,) = client.next("digest").digest.data
        assert data.struct.members[0].bitstring == b"\x0c"  # 0xB never came
    finally:
        client.close()
        server.stop(grace=0.5)


# The digest types of p4c's v1model-digest-containing-ser-enum.p4, whose P4Info p4c writes with
# these ids, type_info.error (core's errors, then the program's) and enum descriptions.
TYPED = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
struct headers { eth_t eth; }
enum MyPacketTypes { IPv4, Other }
enum bit<8> MySerEnum1 { foo = 28, bar = 17, gah = 42 }
struct test_digest_t { bit<48> in_mac_srcAddr; error my_parser_error; MyPacketTypes pkt_type; }
struct test_digest2_t { bit<48> in_mac_dstAddr; MySerEnum1 my_thing; }
struct meta { test_digest_t d; test_digest2_t d2; }
error { UnreachableState }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start { p.extract(h.eth); transition accept; }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply {
        if (h.eth.eth_type == 1) {
            m.d = {h.eth.src, error.PacketTooShort, MyPacketTypes.Other};
            digest(1, m.d);
        } else {
            digest<test_digest2_t>(2, {h.eth.dst, MySerEnum1.gah});
        }
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_errors_and_enums_in_digests_as_p4c_describes_them(tmp_path: Path) -> None:
    info = compiled(tmp_path, TYPED).p4info
    assert {d.preamble.name: d.preamble.id for d in info.digests} == {
        "test_digest_t": 387015589,
        "test_digest2_t": 392468736,
    }
    types = info.type_info
    kinds = [m.type_spec.WhichOneof("type_spec") for m in types.structs["test_digest_t"].members]
    assert kinds == ["bitstring", "error", "enum"]
    assert list(types.error.members) == [
        "NoError",
        "PacketTooShort",
        "NoMatch",
        "StackOutOfBounds",
        "HeaderTooShort",
        "ParserTimeout",
        "ParserInvalidArgument",
        "UnreachableState",
    ]
    assert [m.name for m in types.enums["MyPacketTypes"].members] == ["IPv4", "Other"]
    # p4c 1.2.5 describes a serializable enum field as serializable_enum MySerEnum1
    (_, thing) = types.structs["test_digest2_t"].members
    assert thing.type_spec.serializable_enum.name == "MySerEnum1"
    assert types.serializable_enums["MySerEnum1"].underlying_type.bitwidth == 8


def test_errors_and_enums_travel_by_name_over_p4runtime(tmp_path: Path) -> None:
    program = compiled(tmp_path, TYPED)
    state = program.new_state()
    pipe = program.pipeline(state)
    with serving(program, TYPED, state) as client:
        for name in ("test_digest_t", "test_digest2_t"):
            client.write(digest_update(program, INSERT, name, max_list_size=1))
        pipe.process(1, frame(0xA, dst=0xB, eth_type=1))
        (data,) = client.next("digest").digest.data
        src, err, kind = data.struct.members
        assert (src.bitstring, err.error, kind.enum) == (
            b"\x0a",
            "PacketTooShort",
            "Other",
        )
        pipe.process(1, frame(0xA, dst=0xB, eth_type=2))
        (data,) = client.next("digest").digest.data
        assert data.struct.members[1].enum_value == b"*"  # gah = 42, as P4Info says of it


def test_a_tuple_digest_is_named_as_p4c_names_it(tmp_path: Path) -> None:
    """`digest(r, {a, b})` without a struct type: P4Info's `digest_0` of a tuple type (p4c's
    issue430-1-bmv2 gets this id), its values a P4Data tuple."""
    text = PROGRAM.replace("digest(1, m.learn);", "digest(5, {h.eth.src, s.ingress_port});")
    program = compiled(tmp_path, text)
    (digest,) = [d for d in program.p4info.digests if d.preamble.name.startswith("digest_")]
    assert (digest.preamble.name, digest.preamble.id) == ("digest_0", 401776493)
    widths = [m.bitstring.bit.bitwidth for m in digest.type_spec.tuple.members]
    assert widths == [48, 9]
    state = program.new_state()
    pipe = program.pipeline(state)
    with serving(program, text, state) as client:
        update = p4runtime_pb2.Update(type=INSERT)
        update.entity.digest_entry.digest_id = digest.preamble.id
        update.entity.digest_entry.config.max_list_size = 1
        client.write(update)
        pipe.process(3, frame(0xA))
        (data,) = client.next("digest").digest.data
        assert [m.bitstring for m in data.tuple.members] == [b"\x0a", b"\x03"]
