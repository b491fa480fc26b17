"""A function that writes its out or inout arguments, called inside an expression, on both back
ends: what P4 evaluates before the call (operands to its left, an assignment's target) keeps
the value it had then, as in p4c and BMv2 (p4c's issue2205-bmv2.p4, issue2205-1-bmv2.p4 and
opassign2-bmv2.p4 are of this shape), and so do arguments to the left of the call's, of an
action or an extern; `x op= e` evaluates `x`, and a call in its index, once."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.program import compile_file

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
header cell_t { bit<8> v; }
struct headers { eth_t eth; cell_t[4] cells; }
struct meta { }

bit<8> set_one(inout bit<8> x) { x = 1; return 1; }
bit<16> set_to_182(inout bit<16> x) { x = 182; return 2; }
bit<8> post_increment(inout bit<8> i) { bit<8> was = i; i = i + 1; return was; }
bit<8> twice(in bit<8> x) { return x + x; }

parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start {
        p.extract(h.eth);
        p.extract(h.cells.next);
        p.extract(h.cells.next);
        p.extract(h.cells.next);
        p.extract(h.cells.next);
        transition accept;
    }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    register<bit<8>>(8) r;
    action two(bit<8> x, bit<8> y) { h.eth.src[31:24] = x; h.eth.src[23:16] = y; }
    apply {
        s.egress_spec = 1;
        bit<8> v = 3;
        h.eth.dst[7:0] = v + set_one(v);              // 3 + 1
        bit<8> w = 3;
        h.eth.dst[15:8] = twice(w) * 2 + set_one(w);  // 6 * 2 + 1
        if (h.eth.eth_type == set_to_182(h.eth.eth_type)) {  // 2 == 2, then 182
            h.eth.src[7:0] = 1;
        }
        bit<8> i = 0;
        h.cells[post_increment(i) & 3].v OP= h.eth.dst[47:40];  // cells[0], once
        h.cells[i].v = h.cells[i].v + post_increment(i);       // cells[1] = cells[1] + 1
        h.eth.src[15:8] = i;                                   // 2
        bit<8> u = 3;
        two(u, set_one(u));                    // arguments left to right: 3, then 1
        bit<8> k = 5;
        r.write((bit<32>) k, set_one(k));      // cell 5 gets 1
        bit<8> got;
        r.read(got, 5);
        h.eth.src[39:32] = got;
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.eth); p.emit(h.cells); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

M = 0xFF
OPERATORS = {
    "+": lambda a, b: (a + b) & M,
    "-": lambda a, b: (a - b) & M,
    "*": lambda a, b: (a * b) & M,
    "/": lambda a, b: a // b,
    "%": lambda a, b: a % b,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "<<": lambda a, b: (a << b) & M,
    ">>": lambda a, b: a >> b,
    "|+|": lambda a, b: min(a + b, M),
    "|-|": lambda a, b: max(a - b, 0),
}
OPERAND = 3  # the top byte of the destination address
CELLS = bytes([0xB5, 0x40, 0x77, 0x99])


@pytest.mark.parametrize("op", sorted(OPERATORS))
def test_values_read_before_a_call_keep_their_value(tmp_path: Path, backend: str, op: str) -> None:
    path = tmp_path / "order.p4"
    path.write_text(PROGRAM.replace("OP=", f"{op}="))
    program = compile_file(path)
    pipe = program.pipeline(program.new_state())
    dst = bytes([OPERAND]) + bytes(5)
    ((port, out),) = pipe.process(0, dst + bytes(6) + (2).to_bytes(2, "big") + CELLS)
    assert port == 1
    assert out[5] == 4 and out[4] == 13  # v + set_one(v); twice(w) * 2 + set_one(w)
    assert out[11] == 1 and out[12:14] == (182).to_bytes(2, "big")  # compared with 2
    assert out[10] == 2  # post_increment called twice, once per statement
    assert (out[8], out[9]) == (3, 1)  # an action's arguments
    assert out[7] == 1  # a register's index, read before the value's call
    cells = out[14:18]
    assert cells[0] == OPERATORS[op](CELLS[0], OPERAND), op
    assert cells[1:] == bytes([CELLS[1] + 1, *CELLS[2:]])
