"""Compound assignment: `x op= e` is `x = x op e`, for every operator P4_16 gives one, on both
back ends (checked against Python arithmetic on 16-bit values)."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.program import compile_file
from tests.eth_program import eth_program

OPERATORS = ("+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "|+|=", "|-|=")


def compound(op: str, x: int, e: int, width: int) -> int:
    """`x op= e` on unsigned `width`-bit values, as P4 computes it."""
    top = (1 << width) - 1
    results = {
        "+=": (x + e) & top,
        "-=": (x - e) & top,
        "*=": (x * e) & top,
        "/=": x // e,
        "%=": x % e,
        "&=": x & e,
        "|=": x | e,
        "^=": x ^ e,
        "<<=": (x << e) & top,
        ">>=": x >> e,
        "|+|=": min(x + e, top),
        "|-|=": max(x - e, 0),
    }
    return results[op]


@pytest.mark.parametrize("op", sorted(OPERATORS))
def test_compound_assignment(tmp_path: Path, backend: str, op: str) -> None:
    path = tmp_path / "compound.p4"
    path.write_text(eth_program(f"    apply {{ s.egress_spec = 1; h.eth.eth_type {op} 16w9; }}"))
    program = compile_file(path)
    pipe = program.pipeline(program.new_state())
    for x in (0, 5, 0x1234, 0xFFFB):
        ((_, out),) = pipe.process(0, bytes(12) + x.to_bytes(2, "big") + b"payload")
        assert int.from_bytes(out[12:14], "big") == compound(op, x, 9, 16), (op, x)


@pytest.mark.parametrize("op", sorted(OPERATORS))
def test_compound_assignment_to_a_slice(tmp_path: Path, backend: str, op: str) -> None:
    """`x[11:4] op= e`: the slice's 8 bits computed at their width, the other bits kept."""
    path = tmp_path / "compound.p4"
    path.write_text(eth_program(f"    apply {{ s.egress_spec = 1; h.eth.eth_type[11:4] {op} 3; }}"))
    program = compile_file(path)
    pipe = program.pipeline(program.new_state())
    for x in (0, 0x0050, 0x1234, 0xFFFB):
        ((_, out),) = pipe.process(0, bytes(12) + x.to_bytes(2, "big") + b"payload")
        middle = compound(op, (x >> 4) & 0xFF, 3, 8)
        assert int.from_bytes(out[12:14], "big") == (x & 0xF00F) | (middle << 4), (op, x)
