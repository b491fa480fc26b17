"""`transition select() { ... }` with no keys, as p4c's issue1291-bmv2.p4 writes it: only
`default` or `_` can match, so the parser goes to the first such case's state."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.exceptions import P4CompileError
from p4switch.program import compile_file

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
struct headers { eth_t eth; }
struct meta { }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start {
        p.extract(h.eth);
        transition select() {
            CASES
        }
    }
    state mark { h.eth.eth_type = 0xbeef; transition accept; }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply { s.egress_spec = 2; }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def program_with(tmp_path: Path, cases: str) -> Path:
    path = tmp_path / "select_none.p4"
    path.write_text(PROGRAM.replace("CASES", cases))
    return path


@pytest.mark.parametrize(
    ("cases", "eth_type"),
    [("default: mark;", b"\xbe\xef"), ("_: accept; default: mark;", b"\x08\x00")],
)
def test_the_first_case_is_taken(tmp_path: Path, backend: str, cases: str, eth_type: bytes) -> None:
    program = compile_file(program_with(tmp_path, cases))
    pipe = program.pipeline(program.new_state())
    frame = bytes(6) + bytes(range(1, 7)) + b"\x08\x00" + b"payload"
    assert list(pipe.process(1, frame)) == [(2, frame[:12] + eth_type + b"payload")]


def test_a_case_with_a_value_is_refused(tmp_path: Path) -> None:
    path = program_with(tmp_path, "default: accept;\n            0x800: mark;")
    with pytest.raises(P4CompileError) as info:
        compile_file(path)
    assert (info.value.line, info.value.col) == (11, 13)
    assert info.value.what == "a select with no keys matches only `default` or `_`"
