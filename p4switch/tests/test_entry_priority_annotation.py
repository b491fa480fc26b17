"""`@priority(n)` on table entries, as p4c's BMv2 back end writes it (p4c's
table-entries-priority-bmv2.p4 is of this shape): the smaller number wins, an entry without one
takes its position (1, 2, ...), and the first listed wins among equals; on both back ends, with
the expected ports those BMv2 gives for this program."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.exceptions import P4CompileError
from p4switch.program import CompiledProgram, compile_file
from tests.eth_program import eth_program

PROGRAM = eth_program(
    """\
    action to(bit<9> port) { s.egress_spec = port; }
    table by_type {
        key = { h.eth.eth_type: ternary; }
        actions = { to; NoAction; }
        const entries = {
            0x0800 &&& 0xff00: to(2) @priority(3);
            0x0800 &&& 0xf000: to(3);                // position 2
            0x0000 &&& 0x000f: to(4) @priority(1);
            0x0806: to(5) @priority(2);              // ties with the second: listed later
            _: to(6) @priority(9);
        }
        default_action = NoAction();
    }
    apply { s.egress_spec = 1; by_type.apply(); }
"""
)


def compiled(tmp_path: Path, text: str = PROGRAM) -> CompiledProgram:
    path = tmp_path / "priorities.p4"
    path.write_text(text)
    return compile_file(path)


@pytest.mark.parametrize("const", [True, False])
@pytest.mark.parametrize(
    ("eth_type", "port"),
    [
        (0x0800, 4),  # the first, second, third and last match: @priority(1) wins
        (0x0806, 3),  # the second (2), the fourth (@priority(2)) and the last: the second
        (0x08FF, 3),  # the first (3), the second (2) and the last: the second
        (0x0900, 4),  # the third and the last
        (0x1234, 6),  # the last alone
    ],
)
def test_priority_annotations_order_entries_as_bmv2(
    tmp_path: Path, backend: str, const: bool, eth_type: int, port: int
) -> None:
    text = PROGRAM if const else PROGRAM.replace("const entries", "entries")
    program = compiled(tmp_path, text)
    pipe = program.pipeline(program.new_state())
    out = pipe.process(0, bytes(12) + eth_type.to_bytes(2, "big"))
    assert [p for p, _ in out] == [port]


def test_without_annotations_the_first_listed_wins(tmp_path: Path, backend: str) -> None:
    program = compiled(tmp_path, PROGRAM.replace("@priority(1)", "").replace("@priority(3)", ""))
    pipe = program.pipeline(program.new_state())
    out = pipe.process(0, bytes(12) + (0x0800).to_bytes(2, "big"))
    assert [p for p, _ in out] == [2]


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("@priority(3)", "@priority(three)", "needs a number"),
        ("@priority(3)", "@priority(-3)", "needs a number"),
    ],
)
def test_what_priority_annotations_refuse(tmp_path: Path, old: str, new: str, words: str) -> None:
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, PROGRAM.replace(old, new, 1))
    assert words in err.value.what and err.value.line > 0, err.value


def test_an_entry_takes_one_kind_of_priority(tmp_path: Path) -> None:
    both = """\
        entries = {
            priority = 2: 0x0800 &&& 0xff00: to(2) @priority(3);
            priority = 1: _: to(6);
        }"""
    start, end = PROGRAM.index("        const entries"), PROGRAM.index("        default_action")
    text = PROGRAM[:start] + both + "\n" + PROGRAM[end:]
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, text)
    assert "not both" in err.value.what and err.value.line > 0, err.value
