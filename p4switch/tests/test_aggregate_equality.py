"""`==` and `!=` on headers, header unions, structs, header stacks and tuples (P4_16 8.6,
8.16-8.20): headers are equal when both are invalid or both valid with equal fields; unions
when the same member is valid (or none) and equal; the rest field by field. Lowered in the
front end, so both back ends run it."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.exceptions import P4CompileError
from p4switch.program import CompiledProgram, compile_file

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
header tag_t { bit<16> v; }
header_union u_t { tag_t a; tag_t b; }
struct pair_t { bit<8> x; bool y; }
struct headers { eth_t eth; tag_t t1; tag_t t2; tag_t[2] s1; tag_t[2] s2; u_t u1; u_t u2; }
struct meta { pair_t p; pair_t q; }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start {
        p.extract(h.eth);
        p.extract(h.t1);
        transition select(h.t1.v) { 0: accept; default: two; }
    }
    state two { p.extract(h.t2); transition accept; }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply {
        bit<16> r = 0;
        if (h.t1 == h.t2) { r = r | 1; }
        if (h.t1 != h.t2) { r = r | 2; }
        m.p = {h.eth.src[7:0], true};
        m.q = {h.eth.dst[7:0], true};
        if (m.p == m.q) { r = r | 4; }
        if (h.s1 == h.s2) { r = r | 8; }
        h.s1[0] = h.t1;
        if (h.s1 != h.s2) { r = r | 16; }
        tuple<bit<8>, bit<8>> a = {h.eth.src[7:0], 1};
        tuple<bit<8>, bit<8>> b = {h.eth.dst[7:0], 1};
        if (a == b) { r = r | 32; }
        if (h.u1 == h.u2) { r = r | 64; }  // both have no valid member
        h.u1.a = h.t1;
        if (h.t2.isValid()) { h.u2.b = h.t2; } else { h.u2.a = h.t1; }
        if (h.u1 == h.u2) { r = r | 128; }  // the same member valid, and equal
        h.eth.eth_type = r;
        s.egress_spec = 1;
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def compiled(tmp_path: Path, text: str = PROGRAM) -> CompiledProgram:
    path = tmp_path / "equality.p4"
    path.write_text(text)
    return compile_file(path)


def flags(pipe, dst: int, src: int, t1: int, t2: int | None = None) -> int:
    tags = t1.to_bytes(2, "big") + (b"" if t2 is None else t2.to_bytes(2, "big"))
    frame = dst.to_bytes(6, "big") + src.to_bytes(6, "big") + bytes(2) + tags
    ((_, out),) = pipe.process(0, frame)
    return int.from_bytes(out[12:14], "big")


@pytest.mark.parametrize(
    ("dst", "src", "t1", "t2", "expected"),
    [
        # t2 invalid, t1 valid: headers differ (2); equal structs (4); stacks both empty (8),
        # then not (16); equal tuples (32); unions with no member valid (64), then both `a`
        # and equal (128)
        (5, 5, 0, None, 2 | 4 | 8 | 16 | 32 | 64 | 128),
        # both tags valid and equal (1); unions: u1.a valid, u2.b valid: not equal
        (5, 6, 7, 7, 1 | 8 | 16 | 64),
        # both valid, fields differ
        (5, 6, 7, 8, 2 | 8 | 16 | 64),
    ],
)
def test_aggregates_compare_as_the_spec_says(
    tmp_path: Path, backend: str, dst: int, src: int, t1: int, t2: int | None, expected: int
) -> None:
    program = compiled(tmp_path)
    assert flags(program.pipeline(program.new_state()), dst, src, t1, t2) == expected


def test_values_of_different_types_are_not_compared(tmp_path: Path) -> None:
    text = PROGRAM.replace("if (m.p == m.q)", "if (m.p == h.t1)")
    with pytest.raises(P4CompileError, match="== cannot mix pair_t and tag_t"):
        compiled(tmp_path, text)
