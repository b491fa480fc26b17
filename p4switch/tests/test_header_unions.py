"""Header unions (P4_16 8.20), on both back ends: at most one member valid; `isValid()` of the
union; `setValid()`, `extract` and assignment of a valid header to a member make the others
invalid; `emit` of the union emits the valid one. Expected frames worked out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.exceptions import P4CompileError
from p4switch.program import compile_file

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
header v4_t { bit<8> ttl; bit<8> proto; }
header v6_t { bit<8> hop; bit<8> next; bit<16> flow; }
header_union ip_t { v4_t v4; v6_t v6; }
struct headers { eth_t eth; ip_t ip; }
struct meta { }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start {
        p.extract(h.eth);
        transition select(h.eth.eth_type) { 0x0800: v4; 0x86dd: v6; default: accept; }
    }
    state v4 { p.extract(h.ip.v4); transition accept; }
    state v6 { p.extract(h.ip.v6); transition accept; }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply {
        if (!h.ip.isValid()) { mark_to_drop(s); return; }
        s.egress_spec = 1;
        if (h.ip.v4.isValid()) { h.ip.v4.ttl = h.ip.v4.ttl - 1; }
        if (h.eth.dst[0:0] == 1) {  // to v6: setValid makes v4 invalid
            h.ip.v6.setValid();
            h.ip.v6.hop = 7; h.ip.v6.next = 17; h.ip.v6.flow = 0xabcd;
            h.eth.eth_type = 0x86dd;
        }
        if (h.eth.dst[1:1] == 1) {  // to v4: a valid header assigned makes v6 invalid
            v4_t fresh;
            fresh.setValid();
            fresh.ttl = 9; fresh.proto = 6;
            h.ip.v4 = fresh;
            h.eth.eth_type = 0x0800;
        }
        if (h.eth.dst[2:2] == 1) {  // an invalid header assigned: that member invalid
            v4_t gone;
            h.ip.v4 = gone;
        }
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.eth); p.emit(h.ip); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def compiled(tmp_path: Path, text: str):
    path = tmp_path / "unions.p4"
    path.write_text(text)
    return compile_file(path)


def eth(flags: int, eth_type: int) -> bytes:
    return bytes(5) + bytes([flags]) + bytes(6) + eth_type.to_bytes(2, "big")


V4 = bytes([64, 17])
V6 = bytes([5, 6, 0x12, 0x34])


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        (eth(0, 0x0800) + V4 + b"pay", eth(0, 0x0800) + bytes([63, 17]) + b"pay"),
        (eth(0, 0x86DD) + V6 + b"pay", eth(0, 0x86DD) + V6 + b"pay"),
        # v4 in, made v6: only v6 is emitted
        (eth(1, 0x0800) + V4 + b"pay", eth(1, 0x86DD) + bytes([7, 17, 0xAB, 0xCD]) + b"pay"),
        # v6 in, made v4 by assignment: only v4 is emitted
        (eth(2, 0x86DD) + V6 + b"pay", eth(2, 0x0800) + bytes([9, 6]) + b"pay"),
        # v4 in, an invalid header assigned to v4: nothing of the union is emitted
        (eth(4, 0x0800) + V4 + b"pay", eth(4, 0x0800) + b"pay"),
    ],
)
def test_one_member_of_a_union_at_most(
    tmp_path: Path, backend: str, frame: bytes, expected: bytes
) -> None:
    program = compiled(tmp_path, PROGRAM)
    pipe = program.pipeline(program.new_state())
    ((port, out),) = list(pipe.process(0, frame))
    assert (port, out) == (1, expected)


def test_a_union_with_no_valid_member_is_invalid(tmp_path: Path, backend: str) -> None:
    program = compiled(tmp_path, PROGRAM)
    pipe = program.pipeline(program.new_state())
    assert list(pipe.process(0, eth(0, 0x0806) + b"arp")) == []


BAD = [
    (
        "header_union ip_t { v4_t v4; v6_t v6; }",
        "header_union ip_t { v4_t v4; bit<8> x; }",
        "a header union holds headers",
    ),
    ("if (!h.ip.isValid())", "h.ip.setValid(); if (!h.ip.isValid())", "applies to headers"),
    (
        "struct headers { eth_t eth; ip_t ip; }",
        "struct pair_t { bit<8> a; }\nstruct headers { eth_t eth; ip_t ip; pair_t[2] p; }",
        "a header stack holds headers or header unions, not pair_t",
    ),
]


@pytest.mark.parametrize(("old", "new", "words"), BAD)
def test_what_header_unions_refuse(tmp_path: Path, old: str, new: str, words: str) -> None:
    assert old in PROGRAM
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, PROGRAM.replace(old, new, 1))
    assert words in err.value.what and err.value.line > 0, err.value
