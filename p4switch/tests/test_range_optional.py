"""`range` and `optional` match kinds and entry priorities: in P4Info (RANGE, OPTIONAL), in
a table's entries (`low .. high`, `priority = n:`, which p4c takes on `entries` and refuses on
`const entries`), and over P4Runtime (FieldMatch.range and .optional written, read back, and
used by the pipeline). Ranges run on the python back end; the native one refuses a range table
by name. Optional keys run on both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import NativeUnsupported, P4CompileError
from p4switch.program import CompiledProgram, compile_file
from tests.eth_program import eth_program
from tests.p4rt.fixtures.p4rt_client import (
    Client,
    code_names,
    serving,
    write_errors,
)

PROGRAM = eth_program(
    """\
    action to(bit<9> port) { s.egress_spec = port; }
    table by_type {
        key = { h.eth.eth_type: range; h.eth.dst[7:0]: optional; }
        actions = { to; NoAction; }
        entries = {
            priority = 10: (0x0800 .. 0x08ff, _): to(2);
            priority = 20: (0x0806, 7): to(3);
            priority = 5: (_, 9): to(4);
        }
        default_action = NoAction();
    }
    table open {
        key = { h.eth.eth_type: range; h.eth.dst[7:0]: optional; }
        actions = { to; NoAction; }
        default_action = NoAction();
    }
    apply { s.egress_spec = 1; by_type.apply(); open.apply(); }
"""
)


def compiled(tmp_path: Path, text: str = PROGRAM) -> CompiledProgram:
    path = tmp_path / "ranges.p4"
    path.write_text(text)
    return compile_file(path)


def frame(low_dst: int, eth_type: int) -> bytes:
    return bytes(5) + bytes([low_dst]) + bytes(6) + eth_type.to_bytes(2, "big")


def test_p4info_names_the_match_kinds(tmp_path: Path) -> None:
    program = compiled(tmp_path)
    table = next(t for t in program.p4info.tables if t.preamble.name == "I.by_type")
    kinds = [f.match_type for f in table.match_fields]
    assert kinds == [p4info_pb2.MatchField.RANGE, p4info_pb2.MatchField.OPTIONAL]
    assert table.has_initial_entries and not table.is_const_table  # `entries`, as p4c says


@pytest.mark.parametrize(
    ("low_dst", "eth_type", "port"),
    [
        (0, 0x0800, 2),  # in the range
        (0, 0x08FF, 2),  # its top
        (7, 0x0806, 3),  # both entries match: priority 20 wins over 10
        (9, 0x0806, 2),  # optional 7 does not match 9; the range does (priority 10 > 5)
        (9, 0x0900, 4),  # out of the range: the wildcard range with optional 9
        (0, 0x0900, 1),  # nothing
    ],
)
def test_entries_with_ranges_and_priorities(
    tmp_path: Path, low_dst: int, eth_type: int, port: int
) -> None:
    program = compiled(tmp_path)
    pipe = program.pipeline(program.new_state())
    assert [p for p, _ in pipe.process(0, frame(low_dst, eth_type))] == [port]


def test_the_native_back_end_refuses_a_range_table_by_name(tmp_path: Path) -> None:
    program = compiled(tmp_path)
    with pytest.raises(NativeUnsupported) as err:
        program.pipeline(program.new_state(), backend="native")
    assert "range key h.eth.eth_type" in str(err.value)


def test_optional_keys_run_natively(tmp_path: Path, backend: str) -> None:
    text = PROGRAM.replace("h.eth.eth_type: range;", "h.eth.eth_type: ternary;")
    text = text.replace("0x0800 .. 0x08ff", "0x0800 &&& 0xff00")
    program = compiled(tmp_path, text)
    pipe = program.pipeline(program.new_state())
    assert [p for p, _ in pipe.process(0, frame(7, 0x0806))] == [3]
    assert [p for p, _ in pipe.process(9, frame(9, 0x0900))] == [4]


BAD = [
    ("priority = 5: (_, 9)", "(_, 9)", "every entry a priority, or none"),
    ("priority = 5:", "priority = 0:", "1 or more"),
    ("(0x0800 .. 0x08ff, _)", "(0x08ff .. 0x0800, _)", "is empty"),
    ("(0x0806, 7)", "(0x0806, 7 &&& 3)", "takes a value or _, not a mask"),
    (
        "h.eth.dst[7:0]: optional; }\n        actions = { to; NoAction; }\n        entries",
        "h.eth.dst[7:0]: exact; }\n        actions = { to; NoAction; }\n        entries",
        "exact key h.eth.dst[7:0] cannot be a wildcard",
    ),
    (
        "        entries = {\n            priority = 10",
        "        const entries = {\n            priority = 10",
        "const entries take no priorities",
    ),
]


@pytest.mark.parametrize(("old", "new", "words"), BAD)
def test_what_entries_refuse(tmp_path: Path, old: str, new: str, words: str) -> None:
    assert old in PROGRAM
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, PROGRAM.replace(old, new, 1))
    assert words in err.value.what and err.value.line > 0, err.value


# --- over P4Runtime ----------------------------------------------------------------------------


@pytest.fixture
def switch(tmp_path: Path) -> Iterator[tuple[Client, CompiledProgram, object]]:
    program = compiled(tmp_path)
    state = program.new_state()
    pipe = program.pipeline(state)
    with serving(program, PROGRAM, state) as client:
        yield client, program, pipe


def entry(
    program: CompiledProgram,
    priority: int,
    low: int | None,
    high: int | None,
    opt: int | None,
    port: int,
) -> p4runtime_pb2.Update:
    table = next(t for t in program.p4info.tables if t.preamble.name == "I.open")
    to = next(a for a in program.p4info.actions if a.preamble.name == "I.to")
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    te = update.entity.table_entry
    te.table_id, te.priority = table.preamble.id, priority
    if low is not None and high is not None:
        m = te.match.add(field_id=1)
        m.range.low, m.range.high = low.to_bytes(2, "big"), high.to_bytes(2, "big")
    if opt is not None:
        te.match.add(field_id=2).optional.value = bytes([opt])
    te.action.action.action_id = to.preamble.id
    te.action.action.params.add(param_id=1, value=port.to_bytes(2, "big"))
    return update


def test_range_and_optional_entries_over_p4runtime(switch) -> None:
    client, program, pipe = switch
    client.write(entry(program, 1, 0x9000, 0x90FF, None, 5), entry(program, 2, None, None, 3, 6))
    assert [p for p, _ in pipe.process(0, frame(0, 0x9042))] == [5]
    assert [p for p, _ in pipe.process(0, frame(3, 0x9042))] == [6]  # priority 2 wins
    table_id = entry(program, 1, 0, 0, None, 0).entity.table_entry.table_id
    read = p4runtime_pb2.Entity()
    read.table_entry.table_id = table_id
    back = sorted(client.read(read), key=lambda e: e.table_entry.priority)
    assert [e.table_entry.priority for e in back] == [1, 2]
    first, second = (e.table_entry.match for e in back)
    assert (first[0].range.low, first[0].range.high) == (b"\x90\x00", b"\x90\xff")
    assert len(first) == 1 and second[0].optional.value == b"\x03"


@pytest.mark.parametrize(
    ("low", "high", "opt", "priority", "words"),
    [
        (0x20, 0x10, None, 1, "is empty"),
        (0, 0xFFFF, None, 1, "leave a don't-care range field out"),
        (1, 2, None, 0, "need a priority > 0"),
    ],
)
def test_what_p4runtime_refuses(
    switch, low: int, high: int, opt: int | None, priority: int, words: str
) -> None:
    client, program, _ = switch
    with pytest.raises(grpc.RpcError) as caught:
        client.write(entry(program, priority, low, high, opt, 1))
    errors = write_errors(caught.value)
    assert code_names(errors) == ["INVALID_ARGUMENT"] and words in errors[0].message


SELECT_RANGES = eth_program("apply { s.egress_spec = (bit<9>) h.eth.src[7:0]; }").replace(
    "state start { p.extract(h.eth); transition accept; }",
    """state start {
        p.extract(h.eth);
        transition select(h.eth.eth_type, h.eth.dst[7:0]) {
            (0x0600 .. 0x06ff, _): low;
            (_, 10 .. 20): mid;
            default: accept;
        }
    }
    state low { h.eth.src[7:0] = 2; transition accept; }
    state mid { h.eth.src[7:0] = 3; transition accept; }""",
)


@pytest.mark.parametrize(
    ("eth_type", "low_dst", "port"),
    [(0x0600, 0, 2), (0x06FF, 15, 2), (0x0700, 10, 3), (0x0800, 20, 3), (0x0800, 21, 0)],
)
def test_ranges_in_select_cases(
    tmp_path: Path, backend: str, eth_type: int, low_dst: int, port: int
) -> None:
    assert "0x0600 .. 0x06ff" in SELECT_RANGES
    program = compiled(tmp_path, SELECT_RANGES)
    pipe = program.pipeline(program.new_state())
    assert [p for p, _ in pipe.process(0, frame(low_dst, eth_type))] == [port]


def test_an_empty_select_range_is_refused(tmp_path: Path) -> None:
    text = SELECT_RANGES.replace("10 .. 20", "20 .. 10")
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, text)
    line = next(i for i, x in enumerate(text.splitlines(), 1) if "20 .. 10" in x)
    assert "range 20..10 is empty" in err.value.what and err.value.line == line
