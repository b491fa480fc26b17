"""`python -m p4switch.p4info_diff` (innet's `make p4` check): p4c's P4Info against p4switch's,
by name and width."""

from __future__ import annotations

from pathlib import Path

import pytest

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
    assert "P4Info agree: 3 tables, 3 actions, 1 registers, 1 counters" in capsys.readouterr().out


def test_a_register_of_another_width_is_a_difference(info) -> None:
    other = copy(info)
    reg = next(r for r in other.registers if r.preamble.name == "MyIngress.reg")
    reg.type_spec.bitstring.bit.bitwidth = 16
    (line,) = diff(info, other, ("p4c", "p4switch"))
    assert line == "register MyIngress.reg: width 32 in p4c, 16 in p4switch"


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
