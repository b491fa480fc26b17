"""P4 functions, on both back ends: called as statements and inside expressions (nested, two
in one expression, in conditions, in a parser's select), with in, out and inout parameters,
evaluated in P4's order; what is refused, at its line. Expected values worked out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.exceptions import P4CompileError
from p4switch.program import compile_file
from tests.eth_program import eth_program

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
struct headers { eth_t eth; }
struct meta { bit<8> doubled; }

bit<16> max16(in bit<16> a, in bit<16> b) {
    if (a > b) { return a; }
    return b;
}
bool is_odd(bit<8> x) { return x[0:0] == 1; }
void bump(inout bit<8> x, in bit<8> by) { x = x + by; }
bit<8> bump_and_get(inout bit<8> x) { x = x + 1; return x; }
bit<8> twice(in bit<8> x) { return x + x; }
bit<8> quad(in bit<8> x) { return twice(twice(x)); }
bool tagged(in bit<16> eth_type) { return eth_type == 0x8100; }

parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start {
        p.extract(h.eth);
        m.doubled = twice(h.eth.dst[15:8]);
        transition select(tagged(h.eth.eth_type)) { true: reject; default: accept; }
    }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    apply {
        s.egress_spec = 1;
        h.eth.eth_type = max16(h.eth.eth_type, 0x0800);
        bit<8> v = h.eth.dst[7:0];
        bump(v, 2);
        h.eth.src[7:0] = v;
        h.eth.src[15:8] = quad(v) + twice(1);
        if (is_odd(v) && h.eth.isValid()) { h.eth.src[23:16] = 0xee; }
        bit<8> c = 0;
        h.eth.src[31:24] = bump_and_get(c) * 16 + bump_and_get(c);
        bump_and_get(c);
        h.eth.src[39:32] = c;
        h.eth.dst[15:8] = m.doubled;
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def compiled(tmp_path: Path, text: str):
    path = tmp_path / "functions.p4"
    path.write_text(text)
    return compile_file(path)


@pytest.mark.parametrize(("low", "high", "eth_type"), [(3, 0x10, 0x0806), (4, 0x7F, 0x86DD)])
def test_functions_compute_what_the_spec_says(
    tmp_path: Path, backend: str, low: int, high: int, eth_type: int
) -> None:
    program = compiled(tmp_path, PROGRAM)
    pipe = program.pipeline(program.new_state())
    frame = bytes(4) + bytes([high, low]) + bytes(6) + eth_type.to_bytes(2, "big")
    ((port, out),) = list(pipe.process(0, frame))
    assert port == 1
    v = low + 2
    assert out[11] == v  # bump(v, 2)
    assert out[10] == (4 * v + 2) & 0xFF  # quad(v) + twice(1)
    assert out[9] == (0xEE if v % 2 else 0)  # is_odd(v) && ...
    assert out[8] == 1 * 16 + 2  # left operand first: c becomes 1, then 2
    assert out[7] == 3  # a call whose value is dropped still bumps c
    assert out[4] == (2 * high) & 0xFF  # twice() in the parser
    assert int.from_bytes(out[12:14], "big") == max(eth_type, 0x0800)


def test_a_function_in_a_select_key(tmp_path: Path, backend: str) -> None:
    program = compiled(tmp_path, PROGRAM)
    pipe = program.pipeline(program.new_state())
    list(pipe.process(0, bytes(12) + b"\x81\x00"))
    assert pipe.counts.get("parser_error.NoError") == 1  # `reject` without an error
    assert "twice" not in str(program.p4info)  # functions are not the control plane's


BAD = [
    ("x = x + by; }", "x = x + by; exit; }", "exit is not allowed in a function"),
    ("    return b;\n}", "}", "does not return a value on every path"),
    (
        "bit<8> twice(in bit<8> x) { return x + x; }",
        "bit<8> twice(in bit<8> x) { return twice(x); }",
        "'twice' is not declared",
    ),
    ("h.eth.src[7:0] = v;", "h.eth.src[7:0] = bump(v, 1);", "returns no value"),
    (
        "is_odd(v) && h.eth.isValid()",
        "h.eth.isValid() && bump_and_get(v) == 1",
        "might not be evaluated",
    ),
    (
        "bool is_odd(bit<8> x) { return x[0:0] == 1; }",
        "bool is_odd(bit<8> x) { return; }",
        "must return a value",
    ),
    (
        "void bump(inout bit<8> x, in bit<8> by) { x = x + by; }",
        "void bump(inout bit<8> x, in bit<8> by) { x = x + by; return x; }",
        "this function returns no value",
    ),
    ("bit<8> twice(in bit<8> x)", "bit<8> twice<T>(in bit<8> x)", "generic functions"),
    (
        "bool tagged(in bit<16> eth_type)",
        "error tagged(in bit<16> eth_type)",
        "functions returning error",
    ),
    ("h.eth.src[39:32] = c;", "h.eth.src[39:32] = twice(c, c);", "takes 1 argument(s), got 2"),
    ("bump(v, 2);", "bump(h.eth.dst[7:0] + 1, 2);", "cannot be assigned"),
]


@pytest.mark.parametrize(("old", "new", "words"), BAD)
def test_what_functions_refuse(tmp_path: Path, old: str, new: str, words: str) -> None:
    assert old in PROGRAM
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, PROGRAM.replace(old, new, 1))
    assert words in err.value.what and err.value.line > 0, err.value


NAMED = """\
bit<8> scaled(in bit<8> x, in bit<8> by = 3) { return x * by; }
""" + eth_program(
    """\
    action set_low(inout bit<48> field, bit<8> value = 0x5a) { field[7:0] = value; }
    apply {
        s.egress_spec = 1;
        bit<8> v = h.eth.dst[7:0];
        h.eth.src[15:8] = scaled(by = 2, x = v);  // named, in any order
        h.eth.src[23:16] = scaled(v);  // `by` from its default
        set_low(value = 7, field = h.eth.dst);
        set_low(h.eth.src);
    }
"""
)


def test_named_arguments_and_default_values(tmp_path: Path, backend: str) -> None:
    program = compiled(tmp_path, NAMED)
    pipe = program.pipeline(program.new_state())
    ((_, out),) = list(pipe.process(0, bytes(5) + b"\x05" + bytes(6) + b"\x08\x00"))
    assert out[5] == 7  # set_low(value = 7, field = h.eth.dst)
    assert out[11] == 0x5A and out[10] == 10 and out[9] == 15


NAMED_BAD = [
    ("scaled(by = 2, x = v)", "scaled(by = 2, v)", "names all of its arguments or none"),
    ("scaled(by = 2, x = v)", "scaled(by = 2, y = v)", "has no parameter 'y'"),
    ("scaled(by = 2, x = v)", "scaled(x = 2, x = v)", "given twice"),
    ("scaled(by = 2, x = v)", "scaled(by = 2)", "none for x, which has no default"),
    ("scaled(v);", "scaled(v, 1, 2);", "takes 2 argument(s), got 3"),
    ("s.egress_spec = 1;", "mark_to_drop(standard_metadata = s);", "named arguments"),
]


@pytest.mark.parametrize(("old", "new", "words"), NAMED_BAD)
def test_what_named_arguments_refuse(tmp_path: Path, old: str, new: str, words: str) -> None:
    assert old in NAMED
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, NAMED.replace(old, new, 1))
    assert words in err.value.what and err.value.line > 0, err.value


TYPE_ARGS = (
    eth_program("apply { s.egress_spec = 1; }")
    .replace("p.extract(h.eth);", "p.extract<eth_t>(h.eth);")
    .replace("p.emit(h.eth);", "p.emit<eth_t>(h.eth);")
)


def test_explicit_type_arguments_of_extract_and_emit(tmp_path: Path, backend: str) -> None:
    assert "extract<eth_t>" in TYPE_ARGS and "emit<eth_t>" in TYPE_ARGS
    program = compiled(tmp_path, TYPE_ARGS)
    pipe = program.pipeline(program.new_state())
    frame = bytes(range(14)) + b"payload"
    assert list(pipe.process(0, frame)) == [(1, frame)]
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, TYPE_ARGS.replace("extract<eth_t>", "extract<bit<8>>"))
    assert "extract<bit<8>> of a eth_t" in err.value.what and err.value.line == 7


@pytest.mark.parametrize(
    ("declared", "used", "words"),
    [
        (
            "extern void scramble(inout bit<48> x);",
            "scramble(h.eth.src);",
            "extern scramble has no implementation in p4switch",
        ),
        (
            "extern Scrambler { Scrambler(); void run(inout bit<48> x); }",
            "",
            "extern Scrambler has no implementation in p4switch",
        ),
    ],
)
def test_user_defined_externs_are_refused_by_name(
    tmp_path: Path, declared: str, used: str, words: str
) -> None:
    text = (
        declared
        + "\n"
        + eth_program(
            "    Scrambler() s1;\n    apply { }" if not used else f"    apply {{ {used} }}"
        )
    )
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, text)
    assert words in err.value.what and err.value.line > 1


def test_a_table_key_cannot_call_a_function(tmp_path: Path) -> None:
    text = "bit<8> low(in bit<48> x) { return x[7:0]; }\n" + eth_program(
        """\
    table t { key = { low(h.eth.dst): exact; } actions = { NoAction; } }
    apply { t.apply(); }
"""
    )
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, text)
    assert "a table key cannot call a function" in err.value.what and err.value.line == 12
