"""A table key that is a constant (p4c accepts it; every lookup then matches on that value),
on both back ends and in P4Info."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.exceptions import P4CompileError
from p4switch.program import compile_file
from tests.eth_program import eth_program

PROGRAM = eth_program(
    """\
    action to(bit<9> port) { s.egress_spec = port; }
    table t {
        key = { 16w0x800: exact; h.eth.eth_type: exact; }
        actions = { to; NoAction; }
        const entries = { (0x800, 0x86dd): to(6); (0x801, 0x0800): to(7); }
        default_action = NoAction();
    }
    apply { s.egress_spec = 1; t.apply(); }
"""
)


def compiled(tmp_path: Path, text: str):
    path = tmp_path / "constkey.p4"
    path.write_text(text)
    return compile_file(path)


def test_a_constant_key_matches_its_own_value(tmp_path: Path, backend: str) -> None:
    program = compiled(tmp_path, PROGRAM)
    (table,) = program.p4info.tables
    assert [(f.name, f.bitwidth) for f in table.match_fields] == [
        ("0x800", 16),
        ("h.eth.eth_type", 16),
    ]
    pipe = program.pipeline(program.new_state())
    assert [p for p, _ in pipe.process(0, bytes(12) + b"\x86\xdd")] == [6]
    assert [p for p, _ in pipe.process(0, bytes(12) + b"\x08\x00")] == [1]  # 0x801 never


def test_a_constant_key_needs_a_width(tmp_path: Path) -> None:
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, PROGRAM.replace("16w0x800: exact;", "0x800: exact;"))
    assert "needs a width" in err.value.what and err.value.line == 13
