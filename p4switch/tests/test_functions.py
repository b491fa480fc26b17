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


def with_functions(functions: str, ingress: str) -> str:
    """`eth_program(ingress)` with `functions` declared after its types."""
    types_end = "struct meta { }\n"
    return eth_program(ingress).replace(types_end, types_end + functions, 1)


AGGREGATES = with_functions(
    """\
struct pair_t { bit<8> a; bit<8> b; }
eth_t tagged_eth(in bit<16> eth_type) {
    if (eth_type == 0x8100) { return {1, 2, eth_type}; }
    return {eth_type = 0x0800, src = 3, dst = 4};  // by name, in any order
}
pair_t swapped(in pair_t p) { return {p.b, p.a}; }
""",
    """\
    apply {
        s.egress_spec = 1;
        pair_t p = swapped({h.eth.dst[7:0], h.eth.dst[15:8]});
        h.eth = tagged_eth(h.eth.eth_type);
        h.eth.src[15:0] = p.a ++ p.b;
    }
""",
)


@pytest.mark.parametrize(
    ("eth_type", "dst", "src"), [(0x8100, 1, 2), (0x86DD, 4, 3)], ids=["first", "second"]
)
def test_functions_returning_headers_and_structs(
    tmp_path: Path, backend: str, eth_type: int, dst: int, src: int
) -> None:
    """As p4c's gauntlet_function_if_hdr_return-bmv2.p4: a header or struct returned, here
    as `{...}` (a header made valid), and `{...}` passed for a struct parameter."""
    program = compiled(tmp_path, AGGREGATES)
    pipe = program.pipeline(program.new_state())
    frame = bytes(4) + b"\x12\x34" + bytes(6) + eth_type.to_bytes(2, "big")
    ((_, out),) = list(pipe.process(0, frame))
    assert int.from_bytes(out[0:6], "big") == dst
    assert out[6:10] == bytes(4) and out[10:12] == b"\x12\x34"  # swapped({0x34, 0x12})
    assert int.from_bytes(out[12:14], "big") == (eth_type if dst == 1 else 0x0800)


CONDITIONAL = with_functions(
    """\
bit<8> bump(inout bit<8> x) { x = x + 1; return x; }
bool bumped(inout bit<8> x) { x = x + 1; return x[0:0] == 1; }
""",
    """\
    apply {
        s.egress_spec = 1;
        bit<8> c = 0;
        bool odd = h.eth.dst[0:0] == 1;
        h.eth.src[7:0] = odd ? bump(c) : 0x10 + bump(c) + bump(c);
        bool both = odd && bumped(c);
        bool either = odd || bumped(c);
        h.eth.src[15:8] = c;
        h.eth.src[16:16] = (bit<1>)both;
        h.eth.src[17:17] = (bit<1>)either;
    }
""",
)


@pytest.mark.parametrize("odd", [True, False])
def test_calls_that_might_not_be_evaluated(tmp_path: Path, backend: str, odd: bool) -> None:
    """As p4c's gauntlet_side_effects_in_mux-bmv2.p4: a function with inout parameters in a
    branch of `?:` or after `&&`/`||` runs only when that operand is evaluated."""
    program = compiled(tmp_path, CONDITIONAL)
    pipe = program.pipeline(program.new_state())
    ((_, out),) = list(pipe.process(0, bytes(5) + bytes([odd]) + bytes(8)))
    if odd:  # bump(c) once, then bumped(c) after && (c 2: even), not after ||
        assert (out[11], out[10], out[9] & 3) == (1, 2, 0b10)
    else:  # bump(c) twice, not bumped(c) after &&, then after || (c 3: odd)
        assert (out[11], out[10], out[9] & 3) == (0x10 + 1 + 2, 3, 0b10)


BOUND = with_functions(
    """\
bit<16> bump_val(inout bit<16> x) { x = x | 7; return x >> 1; }
bit<16> one() { return 1; }
""",
    """\
    action add(in bit<16> y, in bit<16> z) { h.eth.src[15:0] = y + z; }
    action mark(in bit<16> y) { h.eth.src[31:16] = y; }
    table t {
        key = { h.eth.dst: exact; }
        actions = { add(bump_val(h.eth.eth_type), bump_val(h.eth.eth_type)); mark(one()); }
        default_action = add(bump_val(h.eth.eth_type), bump_val(h.eth.eth_type));
    }
    apply { s.egress_spec = 1; t.apply(); }
""",
)


def test_function_calls_in_arguments_bound_in_an_action_list(tmp_path: Path) -> None:
    """As p4c's issue2321.p4: a function an action list's bound argument calls runs each
    time the table runs that action, its calls left to right (python back end: the native
    one does not run actions bound in an action list)."""
    program = compiled(tmp_path, BOUND)
    pipe = program.pipeline(program.new_state())
    ((_, out),) = list(pipe.process(0, bytes(12) + b"\x08\x10"))
    assert out[12:14] == b"\x08\x17"  # eth_type | 7
    assert int.from_bytes(out[10:12], "big") == 2 * (0x0817 >> 1)


SKIP = eth_program("apply { s.egress_spec = 1; }").replace(
    "p.extract(h.eth);", "p.extract<eth_t>(_); p.extract(h.eth);"
)


def test_extract_of_a_type_into_dont_care_skips_it(tmp_path: Path, backend: str) -> None:
    """As p4c's issue774-4-bmv2.p4: `p.extract<H>(_)` moves past an H, read into nothing."""
    program = compiled(tmp_path, SKIP)
    pipe = program.pipeline(program.new_state())
    frame = bytes(range(14)) + bytes(range(100, 114)) + b"payload"
    assert list(pipe.process(0, frame)) == [(1, frame[14:])]
    list(pipe.process(0, bytes(20)))  # too short for both: the parser rejects it
    assert pipe.counts.get("parser_error.PacketTooShort") == 1
