"""`python -m p4switch.p4info_diff` (innet's `make p4` check): p4c's P4Info against p4switch's,
by name and width."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2

from p4switch.exceptions import P4InfoError
from p4switch.p4info import write_p4info
from p4switch.p4info_diff import diff, load, main
from p4switch.program import compile_file

PROGRAM = Path(__file__).resolve().parent / "p4rt" / "fixtures" / "simple.p4"


@pytest.fixture(scope="module")
def info():
    return compile_file(PROGRAM).p4info


def copy(info):
    other = type(info)()
    other.CopyFrom(info)
    return other


def test_a_p4info_agrees_with_itself_through_a_file(tmp_path: Path, info, capsys) -> None:
    path = tmp_path / "simple.p4info.txt"
    write_p4info(info, path)
    assert diff(load(path), info, ("file", "compiled")) == []
    assert main([str(path), str(path)]) == 0
    assert (
        "P4Info agree: 3 tables, 3 actions, 1 counters, 1 direct_counters, "
        "2 controller_packet_metadata, 1 registers" in capsys.readouterr().out
    )


def test_a_register_of_another_width_is_a_difference(info) -> None:
    other = copy(info)
    reg = next(r for r in other.registers if r.preamble.name == "MyIngress.reg")
    reg.type_spec.bitstring.bit.bitwidth = 16
    (line,) = diff(info, other, ("p4c", "p4switch"))
    assert (
        line == "register MyIngress.reg: type_spec.bitstring.bit.bitwidth 32 in p4c, 16 in p4switch"
    )


def test_missing_and_changed_tables_and_actions_are_named(info) -> None:
    other = copy(info)
    del other.tables[0]
    name = info.tables[0].preamble.name
    act = next(a for a in other.actions if a.params)
    act.params[0].bitwidth += 1
    ids_changed = next(c for c in other.counters)
    ids_changed.preamble.id += 1
    lines = diff(info, other, ("p4c", "p4switch"))
    assert f"table {name}: in p4c, missing from p4switch" in lines
    assert any(line.startswith(f"action {act.preamble.name}: params") for line in lines)
    assert any(line.startswith(f"counter {ids_changed.preamble.name}: id ") for line in lines)
    assert len(lines) == 3


def test_a_file_that_is_not_a_p4info_is_refused(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("tables { nonsense")
    with pytest.raises(P4InfoError, match="not a P4Info"):
        load(bad)
    assert main([str(bad), str(bad)]) == 2
    assert "not a P4Info" in capsys.readouterr().err


def test_what_p4c_writes_beyond_names_and_widths_is_compared(info) -> None:
    """The initial default action (by the action's name), a match field's annotations, an
    action reference's scope, a table's size, type_info and the package are compared too."""
    other = copy(info)
    table = next(t for t in other.tables if t.HasField("initial_default_action"))
    name = table.preamble.name
    default = next(
        a for a in other.actions if a.preamble.id == table.initial_default_action.action_id
    )
    table.initial_default_action.action_id = next(
        a.preamble.id for a in other.actions if a.preamble.id != default.preamble.id
    )
    table.match_fields[0].annotations.append("@hidden")
    table.action_refs[0].scope = p4info_pb2.ActionRef.TABLE_ONLY
    table.size += 1
    other.type_info.error.members.append("NoError")
    other.pkg_info.version = "1"
    lines = diff(info, other, ("p4c", "p4switch"))
    field = table.match_fields[0].name
    ref = next(a.preamble.name for a in info.actions if a.preamble.id == table.action_refs[0].id)
    assert any(
        line.startswith(f"table {name}: initial_default_action.action_id '{default.preamble.name}'")
        for line in lines
    )
    assert (
        f"table {name}: match_fields {field}: annotations unset in p4c, ['@hidden'] in p4switch"
        in lines
    )
    assert f"table {name}: action_refs {ref}: scope unset in p4c, 'TABLE_ONLY' in p4switch" in lines
    assert f"table {name}: size {table.size - 1} in p4c, {table.size} in p4switch" in lines
    assert "type_info error: in p4switch, missing from p4c" in lines
    assert "pkg_info: version unset in p4c, '1' in p4switch" in lines
    assert len(lines) == 6


def test_a_missing_type_name_is_a_difference(tmp_path: Path, info, capsys) -> None:
    """p4c 1.2.5 names a `type` in `type_name` and describes it in `type_info.new_types`, and
    p4switch does too: a P4Info without them differs, exit 1."""
    reference = copy(info)
    action = next(a for a in reference.actions if a.params)
    action.params[0].type_name.name = "port_id_t"
    reference.type_info.new_types["port_id_t"].original_type.bitstring.bit.bitwidth = 9
    labels = ("p4c", "p4switch")
    param = action.params[0].name
    assert diff(reference, info, labels) == [
        f"action {action.preamble.name}: params {param}: type_name {{name: 'port_id_t'}} in p4c,"
        " unset in p4switch",
        "type_info new_types port_id_t: in p4c, missing from p4switch",
    ]
    paths = [tmp_path / "p4c.txtpb", tmp_path / "p4switch.txtpb"]
    write_p4info(reference, paths[0])
    write_p4info(info, paths[1])
    assert main([str(p) for p in paths]) == 1
    assert "type_info new_types port_id_t" in capsys.readouterr().out
