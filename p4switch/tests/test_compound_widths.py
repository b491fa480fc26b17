"""Compound assignment at every width, signed and unsigned: `x op= e` gives what `x = x op e`
gives and what P4's arithmetic says (two's complement wrapping, saturation at the type's
bounds, arithmetic `>>` on `int<N>`, shifts past the width), for every operator, on both back
ends (property-based: random operands per width; widths over 64 bits on the python back end
alone, as the native one refuses them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p4switch import native
from p4switch.compiler.v1model import Pipeline
from p4switch.native import NativePipeline
from p4switch.program import compile_file
from tests.backends import BACKENDS
from tests.fuzz_profile import fuzz_settings

OPS = ("+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "|+|", "|-|")
UNSIGNED_ONLY = ("/", "%")  # P4 divides unsigned values only
SHIFTS = ("<<", ">>")


@dataclass(frozen=True)
class Kind:
    width: int
    signed: bool

    @property
    def name(self) -> str:
        return f"{'s' if self.signed else 'u'}{self.width}"

    @property
    def type(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(op for op in OPS if not (self.signed and op in UNSIGNED_ONLY))

    def value(self, bits: int) -> int:
        """The number `bits` (the field as sent) stands for."""
        if self.signed and bits >> (self.width - 1):
            return bits - (1 << self.width)
        return bits

    def bits(self, value: int) -> int:
        return value & ((1 << self.width) - 1)

    def clamp(self, value: int) -> int:
        low, high = (
            (-(1 << (self.width - 1)), (1 << (self.width - 1)) - 1)
            if self.signed
            else (0, (1 << self.width) - 1)
        )
        return self.bits(max(low, min(high, value)))


KINDS = tuple(Kind(w, False) for w in (1, 5, 8, 16, 31, 32, 33, 64, 65, 128)) + tuple(
    Kind(w, True) for w in (2, 5, 8, 16, 31, 32, 33, 64, 65, 128)
)
NATIVE_KINDS = tuple(k for k in KINDS if k.width <= 64)


def expected(kind: Kind, op: str, a_bits: int, b_bits: int, shift: int) -> int:
    """P4's `a op b` as the field's bits (for / and %, b is the divisor with its low bit set,
    never zero; for shifts, the amount is `shift`, an unsigned bit<8>)."""
    a, b = kind.value(a_bits), kind.value(b_bits)
    table: dict[str, Callable[[], int]] = {
        "+": lambda: a + b,
        "-": lambda: a - b,
        "*": lambda: a * b,
        "/": lambda: a // (b | 1),
        "%": lambda: a % (b | 1),
        "&": lambda: a_bits & b_bits,
        "|": lambda: a_bits | b_bits,
        "^": lambda: a_bits ^ b_bits,
        "<<": lambda: a << shift,
        ">>": lambda: a >> shift,  # Python's >> is arithmetic on negative numbers
    }
    if op == "|+|":
        return kind.clamp(a + b)
    if op == "|-|":
        return kind.clamp(a - b)
    return kind.bits(table[op]())


def _fields(kind: Kind) -> list[tuple[str, str]]:
    """The input header's fields of one kind: two operands and a shift amount."""
    return [
        (f"a_{kind.name}", kind.type),
        (f"b_{kind.name}", kind.type),
        (f"c_{kind.name}", "bit<8>"),
    ]


def _results(kind: Kind) -> list[tuple[str, str]]:
    """The output header's fields of one kind: per operator, the compound and the plain form."""
    return [
        (f"{form}_{kind.name}_{i}", kind.type)
        for i, _ in enumerate(kind.ops)
        for form in ("compound", "plain")
    ]


def _padded(fields: list[tuple[str, str]], name: str) -> list[tuple[str, str]]:
    bits = sum(int(t.split("<")[1][:-1]) for _, t in fields)
    return [*fields, (f"pad_{name}", f"bit<{-bits % 8 or 8}>")]


def _statements(kind: Kind) -> list[str]:
    n = kind.name
    out = []
    for i, op in enumerate(kind.ops):
        operand = f"h.i.c_{n}" if op in SHIFTS else f"h.i.b_{n}"
        if op in UNSIGNED_ONLY:
            operand = f"(h.i.b_{n} | 1)"
        out.append(f"h.o.compound_{n}_{i} = h.i.a_{n};")
        out.append(f"h.o.compound_{n}_{i} {op}= {operand};")
        out.append(f"h.o.plain_{n}_{i} = h.i.a_{n} {op} {operand};")
    return out


def _header(name: str, fields: list[tuple[str, str]]) -> str:
    return f"header {name} {{ " + " ".join(f"{t} {f};" for f, t in fields) + " }"


@dataclass(frozen=True)
class Layout:
    """The program for some kinds, and its input and output headers' fields."""

    kinds: tuple[Kind, ...]

    @property
    def inputs(self) -> list[tuple[str, str]]:
        return _padded([f for k in self.kinds for f in _fields(k)], "in")

    @property
    def outputs(self) -> list[tuple[str, str]]:
        return _padded([f for k in self.kinds for f in _results(k)], "out")

    def program(self) -> str:
        body = "\n        ".join(line for k in self.kinds for line in _statements(k))
        return f"""\
#include <core.p4>
#include <v1model.p4>
{_header("in_t", self.inputs)}
{_header("out_t", self.outputs)}
struct headers {{ in_t i; out_t o; }}
struct meta {{ }}
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {{
    state start {{ p.extract(h.i); transition accept; }}
}}
control V(inout headers h, inout meta m) {{ apply {{ }} }}
control I(inout headers h, inout meta m, inout standard_metadata_t s) {{
    apply {{
        s.egress_spec = 1;
        h.o.setValid();
        {body}
    }}
}}
control E(inout headers h, inout meta m, inout standard_metadata_t s) {{ apply {{ }} }}
control C(inout headers h, inout meta m) {{ apply {{ }} }}
control D(packet_out p, in headers h) {{ apply {{ p.emit(h.i); p.emit(h.o); }} }}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def pack(fields: list[tuple[str, str]], values: dict[str, int]) -> bytes:
    word, bits = 0, 0
    for f, t in fields:
        width = int(t.split("<")[1][:-1])
        word = (word << width) | values.get(f, 0)
        bits += width
    return word.to_bytes(bits // 8, "big")


def unpack(fields: list[tuple[str, str]], data: bytes) -> dict[str, int]:
    bits = sum(int(t.split("<")[1][:-1]) for _, t in fields)
    word = int.from_bytes(data[: bits // 8], "big")
    out = {}
    for f, t in reversed(fields):
        width = int(t.split("<")[1][:-1])
        out[f] = word & ((1 << width) - 1)
        word >>= width
    return out


AnyPipeline = Pipeline | NativePipeline


@pytest.fixture(scope="module", params=BACKENDS)
def setup(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[AnyPipeline, Layout]:
    """The program on each back end (module scope: hypothesis runs many examples on one)."""
    if request.param == "native" and native.available() is not None:
        pytest.skip(f"native back end: {native.available()}")
    layout = Layout(NATIVE_KINDS if request.param == "native" else KINDS)
    path: Path = tmp_path_factory.mktemp("compound") / "widths.p4"
    path.write_text(layout.program())
    program = compile_file(path)
    return program.pipeline(program.new_state(), backend=request.param), layout


def _operands(kind: Kind) -> st.SearchStrategy[tuple[int, int, int]]:
    top = (1 << kind.width) - 1
    edges = st.sampled_from(sorted({0, 1, top, top >> 1, (top >> 1) + 1, top - 1}))
    value = st.one_of(edges, st.integers(0, top))
    shift = st.one_of(st.integers(0, kind.width + 1), st.integers(0, 255))
    return st.tuples(value, value, shift)


@fuzz_settings(60)
@given(operands=st.tuples(*(_operands(k) for k in KINDS)))
def test_compound_equals_plain_and_p4_arithmetic(
    setup: tuple[AnyPipeline, Layout], operands: tuple[tuple[int, int, int], ...]
) -> None:
    pipe, layout = setup
    drawn = {k: o for k, o in zip(KINDS, operands, strict=True) if k in layout.kinds}
    sent: dict[str, int] = {}
    for kind, (a, b, c) in drawn.items():
        sent |= {f"a_{kind.name}": a, f"b_{kind.name}": b, f"c_{kind.name}": c}
    ((port, frame),) = pipe.process(0, pack(layout.inputs, sent))
    assert port == 1
    got = unpack(layout.outputs, frame[len(pack(layout.inputs, {})) :])
    for kind, (a, b, c) in drawn.items():
        for i, op in enumerate(kind.ops):
            want = expected(kind, op, a, b, c)
            case = (kind.type, op, a, b, c)
            assert got[f"compound_{kind.name}_{i}"] == want, case
            assert got[f"plain_{kind.name}_{i}"] == want, case
