"""Header stacks (P4_16 8.18) and parser loops, on both back ends: source routing (a stack
popped per hop), route recording (a stack pushed per hop), `next`/`last`/`lastIndex`/`size`,
run-time indices, out-of-range accesses, and what is refused, at its line. Expected frames are
worked out from the spec by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.exceptions import P4CompileError
from p4switch.program import compile_file

# Source routing: hops are a stack of (bos, port) after Ethernet (EtherType 0x1234); each
# switch forwards on the first hop and pops it; the last one (bos) restores IPv4.
SOURCE_ROUTING = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
header hop_t { bit<1> bos; bit<15> port; }
header ipv4_t { bit<8> ttl; bit<8> proto; bit<16> rest; }
struct headers { eth_t eth; hop_t[4] hops; ipv4_t ipv4; }
struct meta { bit<32> hops_seen; bit<32> room; }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start {
        p.extract(h.eth);
        transition select(h.eth.eth_type) {
            0x1234: parse_hop; 0x0800: parse_ipv4; default: accept;
        }
    }
    state parse_hop {
        p.extract(h.hops.next);
        m.hops_seen = h.hops.lastIndex + 1;
        m.room = h.hops.size - h.hops.nextIndex;
        transition select(h.hops.last.bos) { 1: parse_ipv4; default: parse_hop; }
    }
    state parse_ipv4 { p.extract(h.ipv4); transition accept; }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply {
        hop_t[4] before = h.hops;  // a local stack, a copy of the packet's
        if (h.hops[0].isValid()) {
            s.egress_spec = (bit<9>) h.hops[0].port;
            if (h.hops[0].bos == 1) { h.eth.eth_type = 0x0800; }
            h.eth.src[7:0] = (bit<8>) m.hops_seen;
            h.eth.src[15:8] = (bit<8>) m.room;
            h.hops.pop_front(1);
            if (h.ipv4.isValid()) { h.ipv4.ttl = h.ipv4.ttl - 1; }
            h.eth.dst[15:8] = (bit<8>) before[1].port;  // the copy kept its second hop
        } else {
            mark_to_drop(s);
        }
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

ETH = bytes.fromhex("0000000000aa") + bytes(6)


def hop(bos: int, port: int) -> bytes:
    return ((bos << 15) | port).to_bytes(2, "big")


def compiled(tmp_path: Path, text: str, name: str = "stacks.p4"):
    path = tmp_path / name
    path.write_text(text)
    return compile_file(path)


def run(program, frame: bytes) -> list[tuple[int, bytes]]:
    pipe = program.pipeline(program.new_state())
    return list(pipe.process(0, frame))


def test_source_routing_pops_one_hop_per_switch(tmp_path: Path, backend: str) -> None:
    program = compiled(tmp_path, SOURCE_ROUTING)
    ipv4 = bytes([64, 17, 0xAB, 0xCD])
    frame = ETH + b"\x12\x34" + hop(0, 2) + hop(0, 3) + hop(1, 4) + ipv4 + b"data"
    ((port, out),) = run(program, frame)
    assert port == 2
    # three hops seen, one slot of four left; the first hop popped, the rest moved up; the
    # IPv4 header behind the hops was parsed, so its TTL goes down at every hop
    hops = hop(0, 3) + hop(1, 4)
    routed = bytes([63, 17, 0xAB, 0xCD])
    assert (
        out
        == bytes(4) + b"\x03\xaa" + bytes(4) + b"\x01\x03" + b"\x12\x34" + hops + routed + b"data"
    )
    # the last hop: IPv4 restored, TTL down by one
    ((port, out),) = run(program, ETH + b"\x12\x34" + hop(1, 4) + ipv4)
    assert port == 4
    end = bytes([63, 17, 0xAB, 0xCD])
    assert out == bytes(5) + b"\xaa" + bytes(4) + b"\x03\x01" + b"\x08\x00" + end


def test_extract_past_the_end_of_a_stack_rejects(tmp_path: Path, backend: str) -> None:
    """Five hops into a stack of four: the fifth `extract(h.hops.next)` is StackOutOfBounds."""
    program = compiled(tmp_path, SOURCE_ROUTING)
    pipe = program.pipeline(program.new_state())
    frame = ETH + b"\x12\x34" + hop(0, 1) * 5 + hop(1, 2)
    list(pipe.process(0, frame))
    assert pipe.counts.get("parser_error.StackOutOfBounds") == 1


# Route recording: each switch pushes its record on the front of a stack of three; a full
# stack loses its oldest record. The parser counts records from a header, in a loop.
RECORD_ROUTE = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
header count_t { bit<8> count; }
header rec_t { bit<8> swid; bit<8> port; }
struct headers { eth_t eth; count_t count; rec_t[3] recs; }
struct meta { bit<8> left; bit<8> pick; }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start {
        p.extract(h.eth);
        transition select(h.eth.eth_type) { 0x5555: parse_count; default: accept; }
    }
    state parse_count {
        p.extract(h.count);
        m.left = h.count.count;
        transition select(m.left) { 0: accept; default: parse_rec; }
    }
    state parse_rec {
        p.extract(h.recs.next);
        m.left = m.left - 1;
        transition select(m.left) { 0: accept; default: parse_rec; }
    }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    action record(bit<8> swid) {
        h.recs.push_front(1);
        h.recs[0].setValid();
        h.recs[0].swid = swid;
        h.recs[0].port = (bit<8>) s.ingress_port;
        h.count.count = h.count.count |+| 1;
    }
    table t {
        key = { h.recs[0].swid: exact; }
        actions = { record; }
        default_action = record(0x77);
    }
    apply {
        s.egress_spec = 1;
        m.pick = h.eth.dst[7:0];
        h.eth.src[7:0] = h.recs[m.pick].swid;  // a run-time index; out of range reads nothing
        h.recs[m.pick].port = 0xee;            // and writes nothing
        if (h.count.isValid()) { t.apply(); }
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.eth); p.emit(h.count); p.emit(h.recs); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def rec(swid: int, port: int) -> bytes:
    return bytes([swid, port])


@pytest.mark.parametrize(
    ("pick", "before", "after", "src_low"),
    [
        # index 0: read 0x11, its port overwritten, then the push moves it to index 1
        (0, [rec(0x11, 1)], [rec(0x77, 5), rec(0x11, 0xEE)], 0x11),
        # index 1 of two records
        (1, [rec(0x11, 1), rec(0x22, 2)], [rec(0x77, 5), rec(0x11, 1), rec(0x22, 0xEE)], 0x22),
        # a full stack: the oldest record (0x33) is pushed off the end
        (
            2,
            [rec(0x11, 1), rec(0x22, 2), rec(0x33, 3)],
            [rec(0x77, 5), rec(0x11, 1), rec(0x22, 2)],
            0x33,
        ),
        # index 3 is outside rec_t[3]: the read leaves src as it was, the write is lost
        (3, [rec(0x11, 1)], [rec(0x77, 5), rec(0x11, 1)], 0x00),
        # no record at all: the first push
        (0, [], [rec(0x77, 5)], 0x00),
    ],
)
def test_route_recording_pushes_one_record_per_switch(
    tmp_path: Path, backend: str, pick: int, before: list[bytes], after: list[bytes], src_low: int
) -> None:
    program = compiled(tmp_path, RECORD_ROUTE)
    eth = bytes(5) + bytes([pick]) + bytes(6) + b"\x55\x55"
    frame = eth + bytes([len(before)]) + b"".join(before) + b"payload"
    pipe = program.pipeline(program.new_state())
    ((port, out),) = list(pipe.process(5, frame))
    assert port == 1
    assert out[11] == src_low
    assert out[14] == min(len(before) + 1, 255)
    assert out[15:] == b"".join(after) + b"payload"


def test_older_forms_a_stack_typedef_and_a_table_with_parentheses(
    tmp_path: Path, backend: str
) -> None:
    """`typedef rec_t[3] recs_t;` names a stack type, and `table t() { ... }` (an older P4_16
    form p4c still takes) is a table: a record is pushed as before."""
    text = RECORD_ROUTE.replace("rec_t[3] recs;", "recs_t recs;").replace(
        "struct headers {", "typedef rec_t[3] recs_t;\nstruct headers {"
    )
    text = text.replace("    table t {", "    table t() {")
    assert "table t() {" in text and "recs_t recs;" in text
    program = compiled(tmp_path, text)
    eth = bytes(12) + b"\x55\x55"
    ((_, out),) = list(program.pipeline(program.new_state()).process(5, eth + b"\x00payload"))
    assert out[14:] == b"\x01" + b"\x77\x05" + b"payload"


LOOP = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
struct headers { eth_t eth; }
struct meta { bit<32> spins; }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start { p.extract(h.eth); transition spin; }
    state spin {
        m.spins = m.spins + 1;
        transition select(h.eth.eth_type) { 0: accept; default: spin; }
    }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply { s.egress_spec = 1; h.eth.src = (bit<48>) m.spins; }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_a_parser_loop_that_never_ends_times_out(tmp_path: Path, backend: str) -> None:
    """A loop that consumes nothing stops after PARSER_STEPS states, with ParserTimeout;
    the packet goes on to ingress (BMv2's reject) and the spins are all counted."""
    from p4switch.compiler.support import PARSER_STEPS

    program = compiled(tmp_path, LOOP)
    pipe = program.pipeline(program.new_state())
    ((_, out),) = list(pipe.process(0, bytes(12) + b"\x08\x00"))
    assert pipe.counts.get("parser_error.ParserTimeout") == 1
    assert int.from_bytes(out[6:12], "big") == PARSER_STEPS - 1  # start, then the spins
    ((_, out),) = list(pipe.process(0, bytes(12) + b"\x00\x00"))
    assert int.from_bytes(out[6:12], "big") == 1


BAD = [
    ("hop_t[4] hops;", "hop_t[0] hops;", "stack size"),
    ("hop_t[4] hops;", "bit<8>[4] hops;", "holds headers"),
    ("h.hops.pop_front(1);", "h.hops.pop_front(h.eth.dst[1:0]);", "constant"),
    ("h.hops.pop_front(1);", "h.eth.pop_front(1);", "header stacks only"),
    ("h.hops.pop_front(1);", "h.hops.next.setValid();", "only be used in a parser"),
    ("h.hops[0].isValid()", "h.hops[4].isValid()", "outside hop_t[4]"),
    ("h.hops[0].isValid()", "h.eth[0].isValid()", "cannot index"),
    ("h.hops.size - h.hops.nextIndex", "h.hops.depth", "no member 'depth'"),
    ("m.hops_seen = h.hops.lastIndex + 1;", "h.hops.lastIndex = 1;", "cannot be assigned"),
]


def test_a_key_on_a_stack_element_is_named_as_p4c_names_it(tmp_path: Path) -> None:
    program = compiled(tmp_path, RECORD_ROUTE)
    (table,) = program.p4info.tables
    assert [f.name for f in table.match_fields] == ["h.recs[0].swid"]
    text = RECORD_ROUTE.replace("h.recs[0].swid: exact", "h.recs[m.pick].swid: exact")
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, text)
    line = next(i for i, x in enumerate(text.splitlines(), 1) if "m.pick].swid: exact" in x)
    assert "at run time" in err.value.what and err.value.line == line


@pytest.mark.parametrize(("old", "new", "words"), BAD)
def test_what_header_stacks_refuse(tmp_path: Path, old: str, new: str, words: str) -> None:
    assert old in SOURCE_ROUTING
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, SOURCE_ROUTING.replace(old, new, 1))
    assert words in err.value.what and err.value.line > 0, err.value


def test_a_long_stack_parses_without_deep_code(tmp_path: Path, backend: str) -> None:
    """A stack of 100 filled by a parser loop: each `extract(hs.next)` is a chain of 100 tests,
    generated flat (an else holding one if is an elif), not 100 levels deep."""
    text = RECORD_ROUTE.replace("rec_t[3] recs;", "rec_t[100] recs;")
    program = compiled(tmp_path, text)
    pipe = program.pipeline(program.new_state())
    records = b"".join(rec(i, i) for i in range(99))
    frame = bytes(5) + b"\x01" + bytes(6) + b"\x55\x55" + bytes([99]) + records
    ((_, out),) = list(pipe.process(5, frame))
    changed = rec(0, 0) + rec(1, 0xEE) + records[4:]  # recs[1].port written at index 1
    assert out[15:] == rec(0x77, 5) + changed  # 99 parsed, one pushed on top: all 100 emitted
    assert out[11] == 1  # recs[1].swid, read with a run-time index


def test_a_signed_index_names_no_element_when_negative(tmp_path: Path, backend: str) -> None:
    text = RECORD_ROUTE.replace("bit<8> pick;", "int<8> pick;").replace(
        "m.pick = h.eth.dst[7:0];", "m.pick = (int<8>) h.eth.dst[7:0];"
    )
    program = compiled(tmp_path, text)
    pipe = program.pipeline(program.new_state())
    frame = bytes(5) + b"\xff" + bytes(6) + b"\x55\x55" + b"\x01" + rec(0x11, 1)
    ((_, out),) = list(pipe.process(5, frame))
    assert out[11] == 0 and out[15:] == rec(0x77, 5) + rec(0x11, 1)  # -1: nothing read or written


# A stack indexed, in a control, by a value read from the same stack at a run-time index
# (the shape of p4c's control-hs-index-test3.p4 and runtime-index-2-bmv2.p4): both as the
# condition of an if and on either side of an assignment.
NESTED_INDEX = """\
#include <core.p4>
#include <v1model.p4>
header pick_t { bit<8> i; bit<8> j; }
header v_t { bit<8> e; }
struct headers { pick_t pick; v_t[4] v; }
struct meta { }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start {
        p.extract(h.pick);
        p.extract(h.v[0]); p.extract(h.v[1]); p.extract(h.v[2]); p.extract(h.v[3]);
        transition accept;
    }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply {
        s.egress_spec = 1;
        if (h.v[h.v[h.pick.i].e & 3].isValid()) {
            h.v[h.v[h.pick.i].e & 3].e = h.pick.j;
        }
        h.pick.j = h.v[(h.v[h.pick.i & 3].e + 1) & 3].e;
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_an_index_read_from_the_stack_itself_at_run_time(tmp_path: Path, backend: str) -> None:
    program = compiled(tmp_path, NESTED_INDEX)
    pipe = program.pipeline(program.new_state())
    # pick.i = 1: v[1].e = 6, 6 & 3 = 2, so v[2].e = pick.j = 0xAA; then v[1].e + 1 = 7,
    # 7 & 3 = 3, so pick.j = v[3].e = 0x33
    ((port, out),) = list(pipe.process(0, bytes([1, 0xAA, 0x10, 6, 0x22, 0x33])))
    assert port == 1 and out == bytes([1, 0x33, 0x10, 6, 0xAA, 0x33])
    # pick.i = 3: v[3].e = 0x31, 0x31 & 3 = 1, so v[1].e = 0xAA; then v[3].e + 1 = 0x32,
    # & 3 = 2, so pick.j = v[2].e = 0x22
    ((_, out),) = list(pipe.process(0, bytes([3, 0xAA, 0x10, 6, 0x22, 0x31])))
    assert out == bytes([3, 0x22, 0x10, 0xAA, 0x22, 0x31])
