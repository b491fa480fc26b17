"""The compiler and both back ends against generated programs: every program built from the
constructs p4switch supports either compiles, builds on both back ends and forwards a frame the
same way on both, or is refused as `file:line:col: error: ...` (a P4CompileError with a line);
never another exception, and never a native build the C compiler refuses.

Where tests/test_frontend_fuzz.py mutates known programs token by token (so nearly every mutant
is a syntax or type error, refused before code generation, and no mutant holds a construct its
seed program lacks), the programs here are well typed by construction, from a small grammar:
header stacks indexed by constants and by run-time values (themselves read from the stack) in
the parser and in the control, slices, casts, concatenation, conditional expressions, nested
structs, function calls (with in, out and inout parameters, also inside `?:`, `&&` and `||`
and in the index of a compound assignment's target; returning structs and headers, given and
returning `{...}`), actions called directly, table applies as statements, in conditions and in
switch statements, a table listing actions with arguments bound to function calls (as p4c's
issue2266.p4 and issue2321.p4), const entries with `@priority`, local variables, validity
changes, stack pushes and pops, `extract<H>(_)` and dropped `lookahead<T>()` in the parser, and
a control instance given to another as a constructor argument. Each generated program is
compiled, built on the python and native back ends, and sent a generated frame.

CI runs a bounded, derandomized number of programs; P4SWITCH_FUZZ=long (`make fuzz`) twenty
times as many, new ones each run (tests/fuzz_profile.py).
"""

from __future__ import annotations

from enum import Enum
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
bit<8> bump(inout bit<8> x) {{ x = x + 1; return x; }}
bool bumped(inout bit<8> x) {{ x = x |+| 3; return x[0:0] == 1; }}
bit<8> reset(out bit<8> x, in bit<8> to) {{ x = to; return to ^ 1; }}
inner_t pair(in bit<8> a, in bit<8> b) {{
    if (a > b) {{ return {{a, b ++ a}}; }}
    return {{b = (bit<16>) a, a = b}};
}}
v_t cell(in inner_t n) {{ return {{n.a, n.b[7:0]}}; }}
idx_t swapped(in idx_t x) {{ return {{x.j, x.i}}; }}

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
{blocks}control I(inout headers h, inout meta m, inout standard_metadata_t s) {{
    action set_x(bit<8> v) {{ m.x = v; }}
    action nop() {{ }}
    action add_to(inout bit<8> x, in bit<8> y) {{ x = x + y; }}
    action put(in bit<8> y) {{ m.inner.a = y; }}
{instances}    table t {{
        key = {{ h.idx.i: {match}; }}
        actions = {{ set_x; nop;{bound} }}
{entries}        default_action = {default};
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
# Controls applied by I through instances, one given to the other as a constructor argument.
BLOCKS = """\
control step_t(inout headers h, inout meta m);
control Step(inout headers h, inout meta m) {{
    apply {{
{step}
    }}
}}
control Twice(inout headers h, inout meta m)(step_t step) {{
    apply {{ step.apply(h, m); step.apply(h, m); }}
}}
"""
INSTANCES = "    Step() st;\n    Twice(st) tw;\n"

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
# bit<8> places an out or inout argument may name (a stack element's at a run-time index too)
PLACES = (*TARGETS, *(f"h.v[{k}].f" for k in range(STACK)), f"h.v[h.idx.i & {STACK - 1}].e")
RARELY = st.sampled_from((False, False, False, True))  # one in four, not biased to it
COMPOUND = ("+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "|+|=", "|-|=")


class Scope(Enum):
    """Where a statement or expression is: what it may apply and call."""

    PARSER = "parser"  # a parser state: functions, no tables, no actions
    CONTROL = "control"  # I's apply block: table t, I's actions, the instances st and tw
    STEP = "step"  # the control Step: functions only


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
    kinds = ("stack", "binary", "shift", "mux", "call", "cast", "concat", "inout", "aggregate")
    kind = draw(st.sampled_from(kinds))
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
    if kind == "inout":  # a call that writes its argument
        place = draw(st.sampled_from(PLACES))
        if draw(st.booleans()):
            return f"bump({place})"
        return f"reset({place}, {draw(bits(inner, tables))})"
    if kind == "aggregate":  # a field of a returned struct or header
        if draw(st.booleans()):
            return f"pair({draw(bits(inner, tables))}, {draw(bits(inner, tables))}).a"
        return f"cell({draw(aggregate(inner, tables))}).f"
    return f"(({draw(bits(inner, tables))} ++ {draw(bits(inner, tables))})[11:4])"


@st.composite
def aggregate(draw: st.DrawFn, depth: int, tables: bool = True) -> str:
    """An inner_t value: a call returning one, `{...}` (by position or by name), or m.inner."""
    kind = draw(st.sampled_from(("call", "list", "named", "field")))
    if kind == "field":
        return "m.inner"
    a, b = draw(bits(depth, tables)), draw(bits(depth, tables))
    if kind == "call":
        return f"pair({a}, {b})"
    if kind == "list":
        return f"{{{a}, (bit<16>) {b}}}"
    return f"{{b = {b} ++ {a}, a = {a}}}"


@st.composite
def condition(draw: st.DrawFn, depth: int, tables: bool = True) -> str:
    """A bool expression."""
    inner = max(depth - 1, 0)
    kinds = ("compare", "valid", "not", "and", "odd", "bumped", *(("hit",) if tables else ()))
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
    if kind == "bumped":  # writes its argument, so only if evaluated
        return f"bumped({draw(st.sampled_from(PLACES))})"
    return "t.apply().hit"


@st.composite
def compound(draw: st.DrawFn, tables: bool) -> str:
    """`x op= e`, x's index possibly calling a function that writes its argument."""
    if draw(st.booleans()):
        target = draw(st.sampled_from(TARGETS))
    else:
        target = f"h.v[{draw(index(1, tables))}].{draw(st.sampled_from('ef'))}"
    op = draw(st.sampled_from(COMPOUND))
    if op in ("/=", "%="):  # by a constant that is not 0
        return f"{target} {op} 8w{draw(st.integers(1, 255))};"
    return f"{target} {op} {draw(bits(2, tables))};"


@st.composite
def aggregate_assignment(draw: st.DrawFn, tables: bool) -> str:
    """A struct or header assigned a call's value, a `{...}` list, or one passed to a call."""
    shape = draw(st.sampled_from(("inner", "cell", "idx", "local")))
    if shape == "inner":
        return f"m.inner = {draw(aggregate(1, tables))};"
    if shape == "cell":
        return f"h.v[{draw(index(1, tables))}] = cell({draw(aggregate(1, tables))});"
    if shape == "idx":
        value = draw(st.sampled_from(("h.idx", f"{{{draw(bits(1, tables))}, 8w3}}")))
        return f"h.idx = swapped({value});"
    target = draw(st.sampled_from(TARGETS))
    return f"{{ inner_t n = {draw(aggregate(1, tables))}; {target} = n.a ^ n.b[15:8]; }}"


@st.composite
def call(draw: st.DrawFn, kind: str, tables: bool) -> str:
    """A call as a statement: of a function (its value dropped), `extract<H>(_)` or a dropped
    `lookahead<T>()` (`skip`), of an action, or an apply of the instance st or tw."""
    if kind == "call":
        place = draw(st.sampled_from(PLACES))
        if draw(st.booleans()):
            return f"bump({place});"
        return f"reset({place}, {draw(bits(1, tables))});"
    if kind == "skip":  # a header read into nothing, or only looked at
        skips = ("p.extract<v_t>(_);", "p.lookahead<idx_t>();", "p.lookahead<bit<16>>();")
        return draw(st.sampled_from(skips))
    if kind == "action":  # called directly, evaluating its arguments left to right
        action = draw(st.sampled_from(("set_x", "put", "add_to")))
        if action == "add_to":
            return f"add_to({draw(st.sampled_from(PLACES))}, {draw(bits(1, tables))});"
        return f"{action}({draw(bits(1, tables))});"
    return draw(st.sampled_from(("tw.apply(h, m);", "st.apply(h, m);")))


@st.composite
def statement(
    draw: st.DrawFn, depth: int, scope: Scope = Scope.CONTROL, nested: bool = False
) -> str:
    """A statement of `scope` (`nested`: the instances st and tw exist)."""
    common = ("assign", "stack-assign", "local", "compound", "call", "aggregate")
    if scope is Scope.PARSER:
        kinds: tuple[str, ...] = (*common, "skip")
    else:
        kinds = (*common, "validity", "push-pop", *(("if",) if depth > 0 else ()))
    if scope is Scope.CONTROL:
        kinds += ("apply", "action", *(("switch",) if depth > 0 else ()))
        kinds += ("instance",) if nested else ()
    kind = draw(st.sampled_from(kinds))
    inner = depth - 1
    tables = scope is Scope.CONTROL
    if kind == "assign":
        return f"{draw(st.sampled_from(TARGETS))} = {draw(bits(2, tables))};"
    if kind == "stack-assign":
        field = draw(st.sampled_from("ef"))
        return f"h.v[{draw(index(1, tables))}].{field} = {draw(bits(2, tables))};"
    if kind == "local":
        target = draw(st.sampled_from(TARGETS))
        return f"{{ bit<8> tmp = {draw(bits(2, tables))}; {target} = tmp |+| 1; }}"
    if kind == "compound":
        return draw(compound(tables))
    if kind == "aggregate":
        return draw(aggregate_assignment(tables))
    if kind in ("call", "skip", "action", "instance"):
        return draw(call(kind, tables))
    if kind == "validity":
        change = draw(st.sampled_from(("setValid", "setInvalid")))
        return f"h.v[{draw(index(1, tables))}].{change}();"
    if kind == "push-pop":
        change = draw(st.sampled_from(("push_front", "pop_front")))
        return f"h.v.{change}({draw(st.integers(1, STACK))});"
    if kind == "apply":
        return "t.apply();"
    if kind == "if":
        then = " ".join(draw(st.lists(statement(inner, scope, nested), max_size=2)))
        orelse = " ".join(draw(st.lists(statement(inner, scope, nested), max_size=2)))
        return f"if ({draw(condition(1, tables))}) {{ {then} }} else {{ {orelse} }}"
    arms = " ".join(draw(st.lists(statement(inner, scope, nested), max_size=2)))
    default = " ".join(draw(st.lists(statement(inner, scope, nested), max_size=1)))
    return f"switch (t.apply().action_run) {{ set_x: {{ {arms} }} default: {{ {default} }} }}"


@st.composite
def computed(draw: st.DrawFn) -> str:
    """A bound argument of an action list computed by a function (one that writes its own
    argument too), run each time the table runs the action."""
    kind = draw(st.sampled_from(("in", "inout", "out", "struct")))
    if kind == "in":
        return f"twice({draw(bits(1, False))})"
    if kind == "inout":
        return f"bump({draw(st.sampled_from(PLACES))})"
    if kind == "out":
        return f"reset({draw(st.sampled_from(PLACES))}, {draw(bits(1, False))})"
    return f"pair({draw(bits(1, False))}, {draw(bits(1, False))}).b[7:0]"


@st.composite
def table(draw: st.DrawFn) -> dict[str, str]:
    """Table t's key kind, the actions it lists with arguments bound (computed by functions,
    as p4c's issue2266.p4 and issue2321.p4), its const entries (with `@priority` when ternary)
    and its default action."""
    match = draw(st.sampled_from(("exact", "ternary")))
    bound: list[str] = []
    if draw(RARELY):  # the native back end does not run these
        if draw(st.booleans()):
            bound.append(f"add_to({draw(st.sampled_from(TARGETS))}, {draw(computed())})")
        if draw(st.booleans()) or not bound:
            bound.append(f"put({draw(computed())})")
    entries: list[str] = []
    keys = draw(st.lists(st.integers(0, 255), unique=True, max_size=3))
    for key in keys:
        action = draw(st.sampled_from((f"set_x(8w{draw(st.integers(0, 255))})", "nop()")))
        if match == "exact":
            entries.append(f"8w{key}: {action};")
            continue
        mask = draw(st.integers(0, 255))
        priority = draw(st.sampled_from(("", f" @priority({draw(st.integers(1, 4))})")))
        entries.append(f"8w{key} &&& 8w{mask}: {action}{priority};")
    if match == "ternary" and entries and draw(st.booleans()):
        entries.append(f"_: nop(){draw(st.sampled_from(('', ' @priority(2)')))};")
    listed = "\n".join(" " * 12 + entry for entry in entries)
    default = draw(st.sampled_from(("set_x(0x5a)", "nop()", *bound)))
    return {
        "match": match,
        "bound": "".join(f" {action};" for action in bound),
        "entries": f"        const entries = {{\n{listed}\n        }}\n" if entries else "",
        "default": default,
    }


def indented(lines: list[str]) -> str:
    return "\n".join(" " * 8 + line for line in lines)


@st.composite
def programs(draw: st.DrawFn) -> str:
    nested = draw(RARELY)  # the instances st and tw
    parser = draw(st.lists(statement(0, Scope.PARSER), max_size=2))
    control = draw(st.lists(statement(2, Scope.CONTROL, nested), min_size=1, max_size=5))
    step: list[str] = []
    if nested:  # Step's statements, and tw applied somewhere in I (st too, maybe)
        step = draw(st.lists(statement(1, Scope.STEP), min_size=1, max_size=2))
        control.insert(draw(st.integers(0, len(control))), "tw.apply(h, m);")
    return SKELETON.format(
        size=STACK,
        parser=indented(parser),
        control=indented(control),
        blocks=BLOCKS.format(step=indented(step)) if nested else "",
        instances=INSTANCES if nested else "",
        **draw(table()),
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
    except NativeUnsupported:  # a located refusal of a construct (actions bound in t's list,
        # one program in four); a C compiler error is a bug
        return
    assert by_native == by_python
