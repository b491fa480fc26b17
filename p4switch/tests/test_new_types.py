"""`type` declarations (new types), read as their underlying type (as p4c's midend does),
on both back ends; P4Info names the parameter's width."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch import runtime as rt
from p4switch.exceptions import P4CompileError
from p4switch.program import compile_file
from tests.eth_program import eth_program

PROGRAM = "type bit<9> port_id_t;\ntype bit<48> mac_t;\n" + eth_program(
    """\
    action to(port_id_t port) { s.egress_spec = (bit<9>) port; }
    table t {
        key = { h.eth.dst: exact; }
        actions = { to; NoAction; }
        default_action = NoAction();
    }
    apply {
        mac_t dst = (mac_t) h.eth.dst;
        s.egress_spec = (port_id_t) 1;
        if (dst == 48w0xffffffffffff) { s.egress_spec = 2; }
        t.apply();
    }
"""
)


def test_new_types_behave_as_their_underlying_type(tmp_path: Path, backend: str) -> None:
    path = tmp_path / "newtype.p4"
    path.write_text(PROGRAM)
    program = compile_file(path)
    action = next(a for a in program.p4info.actions if a.preamble.name == "I.to")
    assert [(p.name, p.bitwidth) for p in action.params] == [("port", 9)]
    state = program.new_state()
    pipe = program.pipeline(state)
    assert [p for p, _ in pipe.process(0, b"\xff" * 6 + bytes(8))] == [2]
    state.table("I.t").insert(rt.TableEntry((rt.exact(5, 48),), rt.ActionCall("I.to", (7,))))
    assert [p for p, _ in pipe.process(0, bytes(5) + b"\x05" + bytes(8))] == [7]


def test_a_new_type_of_a_struct_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "newtype.p4"
    path.write_text(PROGRAM + "type headers whole_t;\n")
    with pytest.raises(P4CompileError) as err:
        compile_file(path)
    assert "a new type must be" in err.value.what
