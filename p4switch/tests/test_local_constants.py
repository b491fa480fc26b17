"""Constants declared inside a parser or a control (P4_16 allows `const` among their local
declarations): usable in the parser's select and the control's actions and conditions, on both
back ends. An instance in a parser is refused naming what it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.exceptions import P4CompileError
from p4switch.program import compile_file

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
header tag_t { bit<8> v; }
struct headers { eth_t eth; tag_t tag; }
struct meta { }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    const bit<16> TAGGED = 0x88b5;
    state start {
        p.extract(h.eth);
        transition select(h.eth.eth_type) { TAGGED: tag; default: accept; }
    }
    state tag { p.extract(h.tag); transition accept; }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    const bit<9> OUT = 3;
    const bit<8> BUMP = 40;
    action bump() { h.tag.v = h.tag.v + BUMP; }
    apply {
        s.egress_spec = OUT;
        if (h.tag.isValid()) { bump(); }
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.eth); p.emit(h.tag); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_local_constants_in_a_parser_and_a_control(tmp_path: Path, backend: str) -> None:
    path = tmp_path / "consts.p4"
    path.write_text(PROGRAM)
    program = compile_file(path)
    pipe = program.pipeline(program.new_state())
    ((port, out),) = pipe.process(0, bytes(12) + b"\x88\xb5" + bytes([2]) + b"rest")
    assert port == 3 and out[14] == 42  # tagged: the parser's constant matched, BUMP added
    ((port, out),) = pipe.process(0, bytes(12) + b"\x08\x00" + bytes([2]) + b"rest")
    assert port == 3 and out[14] == 2  # not tagged: the byte is payload, untouched


def test_an_instance_in_a_parser_is_named(tmp_path: Path) -> None:
    path = tmp_path / "instance.p4"
    text = PROGRAM.replace("const bit<16> TAGGED = 0x88b5;", "register<bit<8>>(4) r;", 1)
    path.write_text(text.replace("TAGGED:", "0x88b5:"))
    with pytest.raises(P4CompileError) as err:
        compile_file(path)
    assert "only parsers can be instantiated in a parser" in err.value.what
    assert err.value.line == 8
