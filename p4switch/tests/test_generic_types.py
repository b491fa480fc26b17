"""Generic structs and headers (`struct S<T> { T f; }`, used as `S<bit<8>>`), as fields,
locals and headers extracted and emitted, on both back ends; the wrong number of type
arguments is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.exceptions import P4CompileError
from p4switch.program import compile_file

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
header tagged_t<T> { T tag; bit<8> kind; }
struct pair_t<A, B> { A first; B second; }
struct headers { eth_t eth; tagged_t<bit<16>> tag; }
struct meta { pair_t<bit<8>, bit<16>> kept; }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start {
        p.extract(h.eth);
        transition select(h.eth.eth_type) { 0x9000: tag; default: accept; }
    }
    state tag { p.extract(h.tag); transition accept; }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply {
        s.egress_spec = 1;
        pair_t<bit<8>, bit<16>> local = {h.tag.kind, h.tag.tag};
        m.kept = local;
        h.tag.tag = m.kept.second + 1;
        h.tag.kind = m.kept.first + 1;
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def compiled(tmp_path: Path, text: str = PROGRAM):
    path = tmp_path / "generic.p4"
    path.write_text(text)
    return compile_file(path)


def test_generic_structs_and_headers(tmp_path: Path, backend: str) -> None:
    program = compiled(tmp_path)
    pipe = program.pipeline(program.new_state())
    ((_, out),) = list(pipe.process(0, bytes(12) + b"\x90\x00" + b"\x12\x34\x07" + b"rest"))
    assert out[14:] == b"\x12\x35\x08" + b"rest"  # a 3-byte tagged_t<bit<16>>, each +1


def test_type_arguments_must_match(tmp_path: Path) -> None:
    with pytest.raises(P4CompileError) as err:
        compiled(
            tmp_path, PROGRAM.replace("tagged_t<bit<16>> tag;", "tagged_t<bit<16>, bool> tag;")
        )
    assert "tagged_t takes 1 type argument(s), got 2" in err.value.what
    assert err.value.line == 6


NESTED = """\
#include <core.p4>
#include <v1model.p4>
struct addr_t { bit<16> high; bit<32> low; }
header eth_t { addr_t dst; addr_t src; bit<16> eth_type; }
struct headers { eth_t eth; }
struct meta { }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start { p.extract(h.eth); transition accept; }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply {
        s.egress_spec = 1;
        addr_t t = h.eth.dst;
        h.eth.dst = h.eth.src;
        h.eth.src = t;
        h.eth.src.low = h.eth.src.low + 1;
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_a_header_holding_structs(tmp_path: Path, backend: str) -> None:
    program = compiled(tmp_path, NESTED)
    pipe = program.pipeline(program.new_state())
    dst, src = bytes.fromhex("0a0b0c0d0e0f"), bytes.fromhex("010203040506")
    ((_, out),) = list(pipe.process(0, dst + src + b"\x08\x00"))
    assert out == src + bytes.fromhex("0a0b0c0d0e10") + b"\x08\x00"  # swapped, low + 1


def test_a_header_cannot_hold_a_header(tmp_path: Path) -> None:
    text = NESTED.replace(
        "header eth_t { addr_t dst;", "header in_t { bit<8> x; }\nheader eth_t { in_t dst;"
    )
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, text)
    assert "a struct of those, not in_t" in err.value.what
