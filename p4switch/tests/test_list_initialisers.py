"""`{...}` initialisers for structs and headers: `x = {a, b}` assigns each field in order (a
nested list for a nested struct), makes a header valid, and works in a local declaration
(`S s = {...};`), on both back ends; a count that does not match is refused at its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.exceptions import P4CompileError
from p4switch.program import compile_file

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
header tag_t { bit<8> a; bit<8> b; }
struct pair_t { bit<8> x; bit<8> y; }
struct nest_t { pair_t p; bit<16> z; }
struct headers { eth_t eth; tag_t tag; }
struct meta { }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start { p.extract(h.eth); transition accept; }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply {
        s.egress_spec = 1;
        nest_t n = {{3, 4}, 16w0x0506};
        h.tag = {n.p.x + n.p.y, 8w9};
        h.eth.eth_type = n.z;
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.eth); p.emit(h.tag); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_list_initialisers_fill_structs_and_make_a_header_valid(
    tmp_path: Path, backend: str
) -> None:
    path = tmp_path / "lists.p4"
    path.write_text(PROGRAM)
    program = compile_file(path)
    pipe = program.pipeline(program.new_state())
    ((_, out),) = pipe.process(0, bytes(12) + b"\x08\x00" + b"data")
    assert out[12:14] == b"\x05\x06"  # n.z, from the nested initialiser
    assert out[14:16] == bytes([7, 9])  # the tag header, made valid and emitted: 3 + 4, 9
    assert out[16:] == b"data"


def test_a_count_that_does_not_match_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.p4"
    path.write_text(PROGRAM.replace("{n.p.x + n.p.y, 8w9}", "{8w1, 8w2, 8w3}"))
    with pytest.raises(P4CompileError) as err:
        compile_file(path)
    assert "3 values for tag_t, which has 2 fields" in err.value.what and err.value.line == 17


NAMED = PROGRAM.replace(
    "control I(inout headers h, inout meta m, inout standard_metadata_t s) {\n",
    "control I(inout headers h, inout meta m, inout standard_metadata_t s) {\n"
    "    pair_t kept = {y = 8w2, x = 8w1};  // a control's own variable, by field name\n",
).replace("nest_t n = {{3, 4}, 16w0x0506};", "nest_t n = {z = 16w0x0506, p = kept};")


def test_named_field_initialisers_and_control_level_ones(tmp_path: Path, backend: str) -> None:
    path = tmp_path / "named.p4"
    path.write_text(NAMED)
    program = compile_file(path)
    pipe = program.pipeline(program.new_state())
    ((_, out),) = pipe.process(0, bytes(12) + b"\x08\x00")
    assert out[12:16] == b"\x05\x06" + bytes([3, 9])  # 1 + 2, by name


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("{y = 8w2, x = 8w1}", "{y = 8w2, w = 8w1}", "pair_t has no field 'w'"),
        ("{y = 8w2, x = 8w1}", "{y = 8w2}", "name each field of pair_t once: x, y"),
        ("{y = 8w2, x = 8w1}", "{y = 8w2, y = 8w1}", "name each field of pair_t once"),
    ],
)
def test_what_named_initialisers_refuse(tmp_path: Path, old: str, new: str, words: str) -> None:
    path = tmp_path / "bad.p4"
    path.write_text(NAMED.replace(old, new))
    with pytest.raises(P4CompileError) as err:
        compile_file(path)
    assert words in err.value.what and err.value.line == 14  # the control-level declaration


TUPLES = PROGRAM.replace(
    "nest_t n = {{3, 4}, 16w0x0506};",
    "tuple<bit<8>, bit<16>> pair = {8w3, 16w0x0506};\n"
    "        tuple<bit<8>, bit<16>> copy = pair;\n"
    "        copy[0] = copy[0] + 1;\n"
    "        nest_t n = {{pair[0], copy[0]}, copy[1]};",
)


def test_tuples_hold_values_by_position(tmp_path: Path, backend: str) -> None:
    path = tmp_path / "tuples.p4"
    path.write_text(TUPLES)
    program = compile_file(path)
    pipe = program.pipeline(program.new_state())
    ((_, out),) = pipe.process(0, bytes(12) + b"\x08\x00")
    assert out[12:16] == b"\x05\x06" + bytes([3 + 4, 9])  # pair[0] + copy[0], pair[1]


def test_a_tuple_index_must_be_in_range(tmp_path: Path) -> None:
    path = tmp_path / "bad.p4"
    path.write_text(TUPLES.replace("copy[0] = copy[0] + 1;", "copy[2] = 1;"))
    with pytest.raises(P4CompileError) as err:
        compile_file(path)
    assert "index 2 is outside tuple<bit<8>, bit<16>>" in err.value.what


ARGUMENTS = PROGRAM.replace(
    "control I(",
    """\
bit<8> sum(in pair_t p) { return p.x + p.y; }
control I(""",
).replace(
    "        h.tag = {n.p.x + n.p.y, 8w9};\n",
    """\
        h.tag = {sum({n.p.x, 8w10}), 8w9};
        h.tag.b = h.tag.a == 13 ? sum({x = 1, y = 2}) : 8w0;
""",
)


def test_list_initialisers_as_values_of_structs_and_headers(tmp_path: Path, backend: str) -> None:
    """As p4c's gauntlet_list_as_in_argument-bmv2.p4: `{...}` where a struct or header value
    is expected (an argument, also by name, in a branch of `?:`) is that value."""
    assert "sum({x = 1" in ARGUMENTS
    path = tmp_path / "lists.p4"
    path.write_text(ARGUMENTS)
    program = compile_file(path)
    pipe = program.pipeline(program.new_state())
    ((_, out),) = pipe.process(0, bytes(12) + b"\x08\x00" + b"data")
    assert out[14:16] == bytes([13, 3])  # sum({3, 10}), then sum({1, 2})
