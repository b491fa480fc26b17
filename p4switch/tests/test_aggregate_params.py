"""Action and function parameters of header and struct type (`inout standard_metadata_t`,
`inout eth_t`, `out` headers): copied in and out field by field, validity included, also when
the action exits; on both back ends. What is refused, at its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch import runtime as rt
from p4switch.exceptions import NativeUnsupported, P4CompileError
from p4switch.program import compile_file

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
header tag_t { bit<16> id; }
struct pair_t { bit<8> a; bit<8> b; }
struct headers { eth_t eth; tag_t tag; }
struct meta { pair_t pair; }

bit<16> low_sum(in eth_t e) { return e.dst[15:0] + e.src[15:0]; }
void swap(inout pair_t p) { bit<8> t = p.a; p.a = p.b; p.b = t; }

parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start { p.extract(h.eth); transition accept; }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    action send(inout standard_metadata_t sm, bit<9> port) { sm.egress_spec = port; }
    action swap_macs(inout eth_t e) {
        bit<48> t = e.dst; e.dst = e.src; e.src = t;
        if (e.eth_type == 0xdead) { e.setInvalid(); exit; }
    }
    action make_tag(out tag_t t, in bit<16> id) { t.setValid(); t.id = id; }
    apply {
        send(s, 3);
        swap_macs(h.eth);
        make_tag(h.tag, low_sum(h.eth));
        m.pair.a = h.eth.dst[7:0];
        m.pair.b = h.eth.src[7:0];
        swap(m.pair);
        h.eth.eth_type = m.pair.a ++ m.pair.b;
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.eth); p.emit(h.tag); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

DST = bytes.fromhex("0200000000a1")
SRC = bytes.fromhex("0200000000b2")


def compiled(tmp_path: Path, text: str):
    path = tmp_path / "params.p4"
    path.write_text(text)
    return compile_file(path)


def test_headers_and_structs_cross_calls_field_by_field(tmp_path: Path, backend: str) -> None:
    program = compiled(tmp_path, PROGRAM)
    pipe = program.pipeline(program.new_state())
    ((port, out),) = list(pipe.process(0, DST + SRC + b"\x08\x00" + b"payload"))
    assert port == 3  # send() wrote standard_metadata through its parameter
    assert out[:12] == SRC + DST  # swap_macs() through an inout header
    # swap(): a = old src low byte (now dst's) = 0xb2, b = 0xa1, swapped back
    assert out[12:14] == bytes([0xA1, 0xB2])
    # make_tag(): an out header, made valid in the action, so emitted; low_sum() in-param
    assert out[14:16] == ((0x00A1 + 0x00B2) & 0xFFFF).to_bytes(2, "big")
    assert out[16:] == b"payload"


def test_an_exit_still_copies_a_header_out(tmp_path: Path, backend: str) -> None:
    """swap_macs() swaps, makes its header invalid and exits: the caller's header is then
    invalid (not emitted), and nothing after the call runs (no tag)."""
    program = compiled(tmp_path, PROGRAM)
    pipe = program.pipeline(program.new_state())
    ((port, out),) = list(pipe.process(0, DST + SRC + b"\xde\xad" + b"payload"))
    assert port == 3
    assert out == b"payload"


BAD = [
    (
        "action send(inout standard_metadata_t sm, bit<9> port)",
        "action send(standard_metadata_t sm, bit<9> port)",
        "directionless action parameter",
    ),
    ("send(s, 3);", "send(h.eth, 3);", "parameter sm is standard_metadata_t"),
    ("void swap(inout pair_t p)", "void swap(inout packet_in p)", "of type packet_in"),
]


@pytest.mark.parametrize(("old", "new", "words"), BAD)
def test_what_aggregate_parameters_refuse(tmp_path: Path, old: str, new: str, words: str) -> None:
    assert old in PROGRAM
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, PROGRAM.replace(old, new, 1))
    assert words in err.value.what and err.value.line > 0, err.value


BOUND = PROGRAM.replace(
    "    apply {\n        send(s, 3);",
    """    table route {
        key = { h.eth.dst: exact; }
        actions = { send(s); NoAction; }
        default_action = send(s, 9);
    }
    apply {
        route.apply();""",
)


def test_a_table_binds_directional_arguments_in_its_action_list(tmp_path: Path) -> None:
    """`send(s)` in the action list binds sm to standard_metadata; the control plane gives
    port (P4Info lists send with port only). Python back end; the native one refuses it."""
    program = compiled(tmp_path, BOUND)
    action = next(a for a in program.p4info.actions if a.preamble.name == "I.send")
    assert [p.name for p in action.params] == ["port"]
    state = program.new_state()
    pipe = program.pipeline(state)
    assert [p for p, _ in pipe.process(0, DST + SRC + b"\x08\x00")] == [9]  # the default
    entry = rt.TableEntry((rt.exact(int(DST.hex(), 16), 48),), rt.ActionCall("I.send", (4,)))
    state.table("I.route").insert(entry)
    assert [p for p, _ in pipe.process(0, DST + SRC + b"\x08\x00")] == [4]
    with pytest.raises(NativeUnsupported) as err:
        program.pipeline(program.new_state(), backend="native")
    assert "arguments bound in its list" in str(err.value)


def test_a_directional_parameter_must_be_bound(tmp_path: Path) -> None:
    with pytest.raises(P4CompileError) as err:
        compiled(
            tmp_path,
            BOUND.replace("actions = { send(s); NoAction; }", "actions = { send; NoAction; }"),
        )
    assert "binds its 1 directional parameter(s)" in err.value.what
