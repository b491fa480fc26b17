"""make p4's check: p4c's P4Info against p4switch's, by name and width."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4switch.exceptions import P4InfoError
from p4switch.p4info import write_p4info
from p4switch.p4info_diff import diff, load, main
from p4switch.program import compile_file

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def innet_info():
    return compile_file(REPO / "p4src" / "innet.p4").p4info


def copy(info):
    other = type(info)()
    other.CopyFrom(info)
    return other


def test_a_p4info_agrees_with_itself_through_a_file(tmp_path: Path, innet_info, capsys) -> None:
    path = tmp_path / "innet.p4info.txt"
    write_p4info(innet_info, path)
    assert diff(load(path), innet_info, ("file", "compiled")) == []
    assert main([str(path), str(path)]) == 0
    assert "P4Info agree: 5 tables, 10 actions" in capsys.readouterr().out


def test_a_register_of_another_width_is_a_difference(innet_info) -> None:
    other = copy(innet_info)
    reg = next(r for r in other.registers if r.preamble.name == "InnetIngress.slot_chunk")
    reg.type_spec.bitstring.bit.bitwidth = 16
    (line,) = diff(innet_info, other, ("p4c", "p4switch"))
    assert line == "register InnetIngress.slot_chunk: width 32 in p4c, 16 in p4switch"


def test_missing_and_changed_tables_and_actions_are_named(innet_info) -> None:
    other = copy(innet_info)
    del other.tables[0]
    name = innet_info.tables[0].preamble.name
    act = next(a for a in other.actions if a.params)
    act.params[0].bitwidth += 1
    ids_changed = next(c for c in other.counters)
    ids_changed.preamble.id += 1
    lines = diff(innet_info, other, ("p4c", "p4switch"))
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
