"""`lookahead<H>()` of a header or a struct, on both back ends: a calculator in the manner of
the p4lang tutorials' `calc` (the parser peeks at a header's first fields to decide whether to
extract it), a whole header read ahead into a variable, and short packets."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.exceptions import P4CompileError
from p4switch.program import compile_file

CALC = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
header calc_t {
    bit<8> p; bit<8> four; bit<8> ver; bit<8> op;
    bit<32> a; bit<32> b; bit<32> res;
}
struct peek_t { bit<8> p; bit<8> four; bool flag; bit<7> rest; }
struct headers { eth_t eth; calc_t calc; }
struct meta { bit<8> peeked_op; bit<32> peeked_b; bit<8> flag; }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start {
        p.extract(h.eth);
        transition select(h.eth.eth_type) { 0x1234: check; default: accept; }
    }
    state check {
        calc_t ahead = p.lookahead<calc_t>();  // the whole header, not consumed
        m.peeked_op = ahead.op;
        m.peeked_b = ahead.b;
        m.flag = p.lookahead<peek_t>().flag ? 8w1 : 8w0;
        transition select(p.lookahead<calc_t>().p, p.lookahead<calc_t>().four,
                          p.lookahead<calc_t>().ver) {
            (0x50, 0x34, 0x01): parse_calc;  // 'P', '4', version 1
            default: accept;
        }
    }
    state parse_calc { p.extract(h.calc); transition accept; }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    action answer(bit<32> value) {
        h.calc.res = value;
        bit<48> tmp = h.eth.dst;
        h.eth.dst = h.eth.src;
        h.eth.src = tmp;
        s.egress_spec = s.ingress_port;
    }
    action add() { answer(h.calc.a + h.calc.b); }
    action sub() { answer(h.calc.a - h.calc.b); }
    action and_() { answer(h.calc.a & h.calc.b); }
    action or_() { answer(h.calc.a | h.calc.b); }
    action xor_() { answer(h.calc.a ^ h.calc.b); }
    action drop() { mark_to_drop(s); }
    table calculate {
        key = { h.calc.op: exact; }
        actions = { add; sub; and_; or_; xor_; drop; }
        const entries = {
            0x2b: add(); 0x2d: sub(); 0x26: and_(); 0x7c: or_(); 0x5e: xor_();
        }
        const default_action = drop();
    }
    apply {
        if (h.calc.isValid()) {
            calculate.apply();
            h.eth.eth_type[7:0] = m.peeked_op ^ (bit<8>) m.peeked_b ^ m.flag;
        } else {
            mark_to_drop(s);
        }
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.eth); p.emit(h.calc); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

DST, SRC = bytes.fromhex("020000000001"), bytes.fromhex("020000000002")


def calc(op: str, a: int, b: int, magic: bytes = b"P4\x01") -> bytes:
    fields = magic + op.encode() + a.to_bytes(4, "big") + b.to_bytes(4, "big") + bytes(4)
    return DST + SRC + b"\x12\x34" + fields


def compiled(tmp_path: Path, text: str):
    path = tmp_path / "calc.p4"
    path.write_text(text)
    return compile_file(path)


@pytest.mark.parametrize(
    ("op", "a", "b", "res"),
    [
        ("+", 7, 5, 12),
        ("-", 5, 7, (5 - 7) % 2**32),
        ("&", 0xF0F0, 0xFF00, 0xF000),
        ("|", 0xF0, 0x0F, 0xFF),
        ("^", 0xFF, 0x0F, 0xF0),
    ],
)
def test_the_calculator_answers(
    tmp_path: Path, backend: str, op: str, a: int, b: int, res: int
) -> None:
    program = compiled(tmp_path, CALC)
    pipe = program.pipeline(program.new_state())
    ((port, out),) = list(pipe.process(3, calc(op, a, b)))
    assert port == 3  # back where it came from, the addresses swapped
    assert out[:12] == SRC + DST
    # what the parser peeked at before extracting: op, b's low byte; '4' = 0x34 has bit 7
    # clear, so peek_t's flag (the third byte's top bit: version 1) is 0
    assert out[13] == ord(op) ^ (b & 0xFF) ^ 0
    assert out[14:26] == b"P4\x01" + op.encode() + a.to_bytes(4, "big") + b.to_bytes(4, "big")
    assert int.from_bytes(out[26:30], "big") == res


def test_the_flag_of_a_struct_lookahead_is_read(tmp_path: Path, backend: str) -> None:
    """peek_t's bool is the 17th bit: version 0x81 sets it; the header is then not a
    calculator's (version 1 expected) and the packet is dropped."""
    program = compiled(tmp_path, CALC.replace("(0x50, 0x34, 0x01)", "(0x50, 0x34, 0x81)"))
    pipe = program.pipeline(program.new_state())
    ((_, out),) = list(pipe.process(3, calc("+", 1, 2, magic=b"P4\x81")))
    assert out[13] == ord("+") ^ 2 ^ 1


def test_not_a_calculator_packet_is_dropped(tmp_path: Path, backend: str) -> None:
    program = compiled(tmp_path, CALC)
    pipe = program.pipeline(program.new_state())
    assert list(pipe.process(3, calc("+", 1, 2, magic=b"P4\x02"))) == []  # wrong version
    assert list(pipe.process(3, calc("%", 1, 2))) == []  # no such operation


def test_a_lookahead_needs_the_whole_header(tmp_path: Path, backend: str) -> None:
    """Reading `.p` needs all 16 bytes of calc_t: one byte short, PacketTooShort."""
    program = compiled(tmp_path, CALC)
    pipe = program.pipeline(program.new_state())
    assert list(pipe.process(3, calc("+", 1, 2)[:-1])) == []
    assert pipe.counts.get("parser_error.PacketTooShort") == 1


def test_what_lookahead_refuses(tmp_path: Path) -> None:
    text = CALC.replace("p.lookahead<peek_t>().flag", "p.lookahead<headers>().eth.dst == 0")
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, text)
    assert "lookahead of headers is not supported" in err.value.what and err.value.line > 0


PEEK_ONLY = """\
#include <core.p4>
#include <v1model.p4>
struct eight_t { bit<64> bits; }
struct headers { }
struct meta { }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start { p.lookahead<eight_t>(); transition accept; }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply { if (s.parser_error != error.NoError) { mark_to_drop(s); } }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_a_lookahead_whose_value_is_dropped_checks_the_length(tmp_path: Path, backend: str) -> None:
    """As p4c's issue1768-bmv2.p4: `p.lookahead<T>();` as a statement consumes nothing, but
    a packet shorter than T is PacketTooShort."""
    program = compiled(tmp_path, PEEK_ONLY)
    pipe = program.pipeline(program.new_state())
    assert list(pipe.process(0, bytes(7))) == []
    assert pipe.counts.get("parser_error.PacketTooShort") == 1
    assert list(pipe.process(0, bytes(range(8)))) == [(0, bytes(range(8)))]
