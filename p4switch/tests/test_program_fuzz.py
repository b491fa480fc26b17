"""The compiler and both back ends against generated programs: every program built from the
constructs p4switch supports either compiles, builds on both back ends and forwards a frame the
same way on both, or is refused as `file:line:col: error: ...` (a P4CompileError with a line);
never another exception, and never a native build the C compiler refuses.

Where tests/test_frontend_fuzz.py mutates known programs token by token (so nearly every mutant
is a syntax or type error, refused before code generation, and no mutant holds a construct its
seed program lacks), the programs here are well typed by construction, from a small grammar:
header stacks indexed by constants and by run-time values (themselves read from the stack) in
the parser and in the control, slices, casts, concatenation, conditional expressions, nested
structs, function calls, table applies as statements, in conditions and in switch statements,
local variables, validity changes and stack pushes and pops. Each generated program is compiled,
built on the python and native back ends, and sent a generated frame.

CI runs a bounded, derandomized number of programs; P4SWITCH_FUZZ=long (`make fuzz`) twenty
times as many, new ones each run (tests/fuzz_profile.py).
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, note
from hypothesis import strategies as st

from p4switch import native
from p4switch.exceptions import NativeUnsupported, P4CompileError
from p4switch.program import CompiledProgram, compile_file
from tests.fuzz_profile import fuzz_settings

STACK = 4  # elements of the stack h.v
SKELETON = """\
#include <core.p4>
#include <v1model.p4>
header eth_t {{ bit<48> dst; bit<48> src; bit<16> eth_type; }}
header idx_t {{ bit<8> i; bit<8> j; }}
header v_t {{ bit<8> e; bit<8> f; }}
struct inner_t {{ bit<8> a; bit<16> b; }}
struct meta {{ inner_t inner; bit<8> x; }}
struct headers {{ eth_t eth; idx_t idx; v_t[{size}] v; }}

bit<8> twice(in bit<8> x) {{ return x + x; }}
bool odd(in bit<8> x) {{ return x[0:0] == 1; }}

parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {{
    state start {{
        p.extract(h.eth);
        p.extract(h.idx);
        transition select(h.idx.j[0:0]) {{ 1: more; default: done; }}
    }}
    state more {{
        p.extract(h.v.next);
        transition select(h.v.last.f) {{ 0: done; default: more; }}
    }}
    state done {{
{parser}
        transition accept;
    }}
}}
control V(inout headers h, inout meta m) {{ apply {{ }} }}
control I(inout headers h, inout meta m, inout standard_metadata_t s) {{
    action set_x(bit<8> v) {{ m.x = v; }}
    action nop() {{ }}
    table t {{
        key = {{ h.idx.i: exact; }}
        actions = {{ set_x; nop; }}
        default_action = set_x(0x5a);
    }}
    apply {{
        s.egress_spec = 1;
{control}
    }}
}}
control E(inout headers h, inout meta m, inout standard_metadata_t s) {{ apply {{ }} }}
control C(inout headers h, inout meta m) {{ apply {{ }} }}
control D(packet_out p, in headers h) {{
    apply {{ p.emit(h); }}
}}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

LEAVES = (
    "h.idx.i",
    "h.idx.j",
    "m.x",
    "m.inner.a",
    "h.eth.src[7:0]",
    "m.inner.b[11:4]",
    "(bit<8>) h.eth.eth_type",
    *(f"h.v[{k}].e" for k in range(STACK)),
    "h.v[h.idx.i].e",  # run-time indices
    f"h.v[h.idx.j & {STACK - 1}].f",
)
TARGETS = ("m.x", "m.inner.a", "h.idx.j", "h.eth.src[15:8]", "m.inner.b[7:0]", "h.eth.dst[7:0]")


@st.composite
def index(draw: st.DrawFn, depth: int, tables: bool = True) -> str:
    """A stack index: a constant, or a run-time value (masked to the stack or not; a constant
    out of range is refused, so a literal is always masked)."""
    kind = draw(st.sampled_from(("const", "value", "masked")))
    if kind == "const":
        return str(draw(st.integers(0, STACK - 1)))
    value = draw(bits(depth, tables))
    return value if kind == "value" and not value.startswith("8w") else f"{value} & {STACK - 1}"


@st.composite
def bits(draw: st.DrawFn, depth: int, tables: bool = True) -> str:
    """A bit<8> expression (`tables`: where table t can be applied)."""
    if depth <= 0 or draw(st.integers(0, 2)) == 0:
        if draw(st.booleans()):
            return f"8w{draw(st.integers(0, 255))}"
        return draw(st.sampled_from(LEAVES))
    inner = depth - 1
    kind = draw(st.sampled_from(("stack", "binary", "shift", "mux", "call", "cast", "concat")))
    if kind == "stack":
        return f"h.v[{draw(index(inner, tables))}].{draw(st.sampled_from('ef'))}"
    if kind == "binary":
        op = draw(st.sampled_from(("+", "-", "&", "|", "^", "|+|", "|-|")))
        return f"({draw(bits(inner, tables))} {op} {draw(bits(inner, tables))})"
    if kind == "shift":
        op = draw(st.sampled_from(("<<", ">>")))
        return f"({draw(bits(inner, tables))} {op} {draw(st.integers(0, 9))})"
    if kind == "mux":
        test, yes, no = (
            draw(condition(inner, tables)),
            draw(bits(inner, tables)),
            draw(bits(inner, tables)),
        )
        return f"({test} ? {yes} : {no})"
    if kind == "call":
        return f"twice({draw(bits(inner, tables))})"
    if kind == "cast":
        return f"((bit<8>) ((bit<16>) {draw(bits(inner, tables))} + 16w300))"
    return f"(({draw(bits(inner, tables))} ++ {draw(bits(inner, tables))})[11:4])"


@st.composite
def condition(draw: st.DrawFn, depth: int, tables: bool = True) -> str:
    """A bool expression."""
    inner = max(depth - 1, 0)
    kinds = ("compare", "valid", "not", "and", "odd", *(("hit",) if tables else ()))
    kind = draw(st.sampled_from(kinds))
    if kind == "compare":
        op = draw(st.sampled_from(("==", "!=", "<", ">=")))
        return f"({draw(bits(inner, tables))} {op} {draw(bits(inner, tables))})"
    if kind == "valid":
        return f"h.v[{draw(index(inner, tables))}].isValid()"
    if kind == "not":
        return f"!{draw(condition(inner, tables))}"
    if kind == "and":
        op = draw(st.sampled_from(("&&", "||")))
        return f"({draw(condition(inner, tables))} {op} {draw(condition(inner, tables))})"
    if kind == "odd":
        return f"odd({draw(bits(inner, tables))})"
    return "t.apply().hit"


@st.composite
def statement(draw: st.DrawFn, depth: int, in_parser: bool = False) -> str:
    """A statement of the control (or, `in_parser`, of a parser state)."""
    simple = ("assign", "stack-assign", "local") if in_parser else None
    kinds = simple or (
        "assign",
        "stack-assign",
        "local",
        "validity",
        "push-pop",
        "apply",
        *(("if", "switch") if depth > 0 else ()),
    )
    kind = draw(st.sampled_from(kinds))
    inner = depth - 1
    tables = not in_parser
    if kind == "assign":
        return f"{draw(st.sampled_from(TARGETS))} = {draw(bits(2, tables))};"
    if kind == "stack-assign":
        field = draw(st.sampled_from("ef"))
        return f"h.v[{draw(index(1, tables))}].{field} = {draw(bits(2, tables))};"
    if kind == "local":
        target = draw(st.sampled_from(TARGETS))
        return f"{{ bit<8> tmp = {draw(bits(2, tables))}; {target} = tmp |+| 1; }}"
    if kind == "validity":
        change = draw(st.sampled_from(("setValid", "setInvalid")))
        return f"h.v[{draw(index(1))}].{change}();"
    if kind == "push-pop":
        change = draw(st.sampled_from(("push_front", "pop_front")))
        return f"h.v.{change}({draw(st.integers(1, STACK))});"
    if kind == "apply":
        return "t.apply();"
    if kind == "if":
        then = " ".join(draw(st.lists(statement(inner), max_size=2)))
        orelse = " ".join(draw(st.lists(statement(inner), max_size=2)))
        return f"if ({draw(condition(1))}) {{ {then} }} else {{ {orelse} }}"
    arms = " ".join(draw(st.lists(statement(inner), max_size=2)))
    default = " ".join(draw(st.lists(statement(inner), max_size=1)))
    return f"switch (t.apply().action_run) {{ set_x: {{ {arms} }} default: {{ {default} }} }}"


@st.composite
def programs(draw: st.DrawFn) -> str:
    parser = draw(st.lists(statement(0, in_parser=True), max_size=2))
    control = draw(st.lists(statement(2), min_size=1, max_size=5))
    return SKELETON.format(
        size=STACK,
        parser="\n".join(" " * 8 + line for line in parser),
        control="\n".join(" " * 8 + line for line in control),
    )


@st.composite
def frames(draw: st.DrawFn) -> bytes:
    """Ethernet, the index header and up to one more stack element than the stack holds (the
    parser extracts elements while the one before has f != 0, when j is odd), then payload."""
    eth = draw(st.binary(min_size=14, max_size=14))
    idx = draw(st.binary(min_size=2, max_size=2))
    count = draw(st.integers(0, STACK + 1))
    elements = b"".join(bytes([draw(st.integers(0, 255)), 1]) for _ in range(count)) + b"\x07\x00"
    return eth + idx + elements + draw(st.binary(max_size=8))


def forwarded(program: CompiledProgram, backend: str, frame: bytes) -> list[tuple[int, bytes]]:
    pipe = program.pipeline(program.new_state(), backend=backend, seed=1)
    return [(port, bytes(out)) for port, out in pipe.process(0, frame)]


@fuzz_settings(25)
@given(text=programs(), frame=frames())
def test_a_generated_program_compiles_and_runs_or_is_refused_at_a_line(
    tmp_path_factory, text: str, frame: bytes
) -> None:
    note(text)  # the program and frame of a failing example, in full
    note(f"frame: {frame.hex()}")
    path: Path = tmp_path_factory.mktemp("fuzz") / "generated.p4"
    path.write_text(text)
    try:
        program = compile_file(path)
    except P4CompileError as err:
        assert err.line > 0, str(err)
        return
    by_python = forwarded(program, "python", frame)
    if native.available() is not None:
        return
    try:
        by_native = forwarded(program, "native", frame)
    except NativeUnsupported:  # a located refusal of a construct; a C compiler error is a bug
        return
    assert by_native == by_python
