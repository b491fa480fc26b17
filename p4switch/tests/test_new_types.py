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


CASTS = "type bool flag_t;\ntype bit<9> port_id_t;\n" + eth_program(
    """\
    table by_port {
        key = { (port_id_t)h.eth.src[8:0]: exact @name("port"); }
        actions = { NoAction; }
    }
    apply {
        by_port.apply();
        flag_t broadcast = (flag_t)(h.eth.dst == 48w0xffffffffffff);
        port_id_t port = (port_id_t)h.eth.src[8:0];
        if ((bool)broadcast) { port = (port_id_t)(bit<9>)3; }
        s.egress_spec = (bit<9>)port;
    }
"""
)


def test_casts_between_new_types_and_their_types_run(tmp_path: Path, backend: str) -> None:
    """A cast to or from a new type names the value's type for P4Info (a key cast to one has
    its type_name, as p4c 1.2.5 writes it) and changes nothing else, bool included, on both
    back ends."""
    path = tmp_path / "casts.p4"
    path.write_text(CASTS)
    program = compile_file(path)
    (table,) = program.p4info.tables
    assert table.match_fields[0].type_name.name == "port_id_t"
    pipe = program.pipeline(program.new_state())
    assert [p for p, _ in pipe.process(0, b"\xff" * 6 + bytes(5) + b"\x07" + bytes(2))] == [3]
    assert [p for p, _ in pipe.process(0, bytes(6) + bytes(4) + b"\x01\x05" + bytes(2))] == [0x105]
