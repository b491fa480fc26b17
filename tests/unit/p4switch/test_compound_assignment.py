"""Compound assignment: `x op= e` is `x = x op e`, for every operator P4_16 gives one, on both
back ends (checked against Python arithmetic on 16-bit values)."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.program import compile_file

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
struct headers { eth_t eth; }
struct meta { }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start { p.extract(h.eth); transition accept; }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply { s.egress_spec = 1; h.eth.eth_type OP 16w9; }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""
M = 0xFFFF
CASES = {
    "+=": lambda x: (x + 9) & M, "-=": lambda x: (x - 9) & M, "*=": lambda x: (x * 9) & M,
    "/=": lambda x: x // 9, "%=": lambda x: x % 9, "&=": lambda x: x & 9, "|=": lambda x: x | 9,
    "^=": lambda x: x ^ 9, "<<=": lambda x: (x << 9) & M, ">>=": lambda x: x >> 9,
    "|+|=": lambda x: min(x + 9, M), "|-|=": lambda x: max(x - 9, 0),
}  # fmt: skip


@pytest.mark.parametrize("op", sorted(CASES))
def test_compound_assignment(tmp_path: Path, backend: str, op: str) -> None:
    path = tmp_path / "compound.p4"
    path.write_text(PROGRAM.replace("OP", op))
    program = compile_file(path)
    pipe = program.pipeline(program.new_state())
    for x in (0, 5, 0x1234, 0xFFFB):
        ((_, out),) = pipe.process(0, bytes(12) + x.to_bytes(2, "big") + b"payload")
        assert int.from_bytes(out[12:14], "big") == CASES[op](x), (op, x)
