"""Header stacks of header unions (P4_16 8.20): `hs.next.member` extracted in the parser,
an element valid when one of its members is, members read and written through a constant
index, `pop_front`, and emit of the valid member of each element, on both back ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.program import compile_file

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header S { bit<8> t; }
header O1 { bit<8> data; }
header O2 { bit<16> data; }
header_union U { O1 byte; O2 short; }
struct headers { S base; U[2] u; }
struct meta { }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start {
        p.extract(h.base);
        transition select(h.base.t) { 0: o1o1; 1: o1o2; 2: o2o1; 3: o2o2; default: accept; }
    }
    state o1o1 { p.extract(h.u.next.byte); p.extract(h.u.next.byte); transition accept; }
    state o1o2 { p.extract(h.u.next.byte); p.extract(h.u.next.short); transition accept; }
    state o2o1 { p.extract(h.u.next.short); p.extract(h.u.next.byte); transition accept; }
    state o2o2 { p.extract(h.u.next.short); p.extract(h.u.next.short); transition accept; }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply {
        s.egress_spec = 1;
        if (h.u[0].short.isValid()) { h.u[0].short.data = 0xFFFF; }
        else if (h.u[0].byte.isValid()) { h.u[0].byte.data = 0xFF; }
        if (h.base.t == 3) { h.u.pop_front(1); }
        if (h.u[1].isValid()) { h.base.t = h.base.t | 0x10; }
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        ("00 11 22", "10 ff 22"),  # byte, byte: the first set to ff; u[1] valid: t | 0x10
        ("01 11 2233", "11 ff 2233"),  # byte, short
        ("02 1122 33", "12 ffff 33"),  # short, byte
        ("03 1122 3344", "03 3344"),  # short, short, then popped: u[1] empty
        ("04 ab", "04 ab"),  # no unions: the rest is payload
    ],
)
def test_a_stack_of_header_unions(tmp_path: Path, backend: str, frame: str, expected: str) -> None:
    path = tmp_path / "union_stack.p4"
    path.write_text(PROGRAM)
    program = compile_file(path)
    ((port, out),) = program.pipeline(program.new_state()).process(0, bytes.fromhex(frame))
    assert (port, out.hex()) == (1, expected.replace(" ", ""))
