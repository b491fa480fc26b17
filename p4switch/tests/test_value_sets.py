"""Parser value sets (`value_set<bit<N>>(size)` in select cases, and `value_set<S>` of a struct,
one key per field with its own match kind): in P4Info, set in process
and over P4Runtime (ValueSetEntry written, read back, used by the parser). The python back
end runs them; the native one refuses them by name (the switch then runs python, saying so)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch import runtime as rt
from p4switch.exceptions import NativeUnsupported, P4CompileError
from p4switch.program import CompiledProgram, compile_file
from tests.eth_program import eth_program
from tests.p4rt.fixtures.p4rt_client import (
    Client,
    code_names,
    serving,
    write_errors,
)

PROGRAM = eth_program("apply { s.egress_spec = (bit<9>) h.eth.src[7:0]; }").replace(
    "state start { p.extract(h.eth); transition accept; }",
    """value_set<bit<16>>(4) tunnels;
    state start {
        p.extract(h.eth);
        transition select(h.eth.eth_type) { tunnels: tunnel; default: accept; }
    }
    state tunnel { h.eth.src[7:0] = 5; transition accept; }""",
)


def compiled(tmp_path: Path, text: str = PROGRAM) -> CompiledProgram:
    path = tmp_path / "value_sets.p4"
    path.write_text(text)
    return compile_file(path)


def ports(pipe, eth_type: int) -> list[int]:
    return [p for p, _ in pipe.process(0, bytes(12) + eth_type.to_bytes(2, "big"))]


def test_a_value_set_chooses_the_select_case(tmp_path: Path) -> None:
    program = compiled(tmp_path)
    (value_set,) = program.p4info.value_sets
    assert (value_set.preamble.name, value_set.size) == ("P.tunnels", 4)
    assert [m.bitwidth for m in value_set.match] == [16]
    assert value_set.preamble.id >> 24 == p4info_pb2.P4Ids.VALUE_SET
    state = program.new_state()
    pipe = program.pipeline(state)
    assert ports(pipe, 0x88B5) == [0]  # an empty set matches nothing
    state.value_set("P.tunnels").set([rt.exact(0x88B5, 16), rt.exact(0x88B6, 16)])
    assert ports(pipe, 0x88B5) == [5] and ports(pipe, 0x88B6) == [5] and ports(pipe, 0x0800) == [0]


def test_the_native_back_end_refuses_value_sets_by_name(tmp_path: Path) -> None:
    program = compiled(tmp_path)
    with pytest.raises(NativeUnsupported) as err:
        program.pipeline(program.new_state(), backend="native")
    assert "value set P.tunnels" in str(err.value)


def test_a_value_set_of_another_width_is_refused(tmp_path: Path) -> None:
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, PROGRAM.replace("value_set<bit<16>>(4)", "value_set<bit<8>>(4)"))
    assert "P.tunnels holds bit<8>, the key is bit<16>" in err.value.what


@pytest.fixture
def switch(tmp_path: Path) -> Iterator[tuple[Client, CompiledProgram, object]]:
    program = compiled(tmp_path)
    state = program.new_state()
    pipe = program.pipeline(state)
    with serving(program, PROGRAM, state) as client:
        yield client, program, pipe


def members(program: CompiledProgram, *values: int) -> p4runtime_pb2.Update:
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
    entry = update.entity.value_set_entry
    entry.value_set_id = program.p4info.value_sets[0].preamble.id
    for v in values:
        entry.members.add().match.add(field_id=1).exact.value = v.to_bytes(2, "big")
    return update


def test_value_sets_over_p4runtime(switch) -> None:
    client, program, pipe = switch
    client.write(members(program, 0x1234))
    assert ports(pipe, 0x1234) == [5]
    read = p4runtime_pb2.Entity()
    read.value_set_entry.value_set_id = program.p4info.value_sets[0].preamble.id
    (back,) = client.read(read)
    assert [m.match[0].exact.value for m in back.value_set_entry.members] == [b"\x12\x34"]
    client.write(members(program))  # a write replaces the whole set
    assert ports(pipe, 0x1234) == [0]
    with pytest.raises(grpc.RpcError) as caught:
        client.write(members(program, 1, 2, 3, 4, 5))
    errors = write_errors(caught.value)
    assert code_names(errors) == ["RESOURCE_EXHAUSTED"] and "it holds 4" in errors[0].message


# A value set of a struct: one key per field, each matched as its @match says (p4c's P4Info
# for such a set, pvs-struct-3-bmv2, names and numbers the fields this way).
STRUCTS = (
    eth_program("apply { s.egress_spec = (bit<9>) h.eth.src[7:0]; }")
    .replace(
        "struct meta { }",
        "struct meta { }\n"
        "struct pvs_t { @match(ternary) bit<16> eth_type; @match(range) bit<8> a; bit<8> b; }",
    )
    .replace(
        "state start { p.extract(h.eth); transition accept; }",
        """value_set<pvs_t>(4) tunnels;
    state start {
        p.extract(h.eth);
        transition select(h.eth.eth_type, h.eth.dst[15:8], h.eth.dst[7:0]) {
            tunnels: tunnel;
            default: accept;
        }
    }
    state tunnel { h.eth.src[7:0] = 5; transition accept; }""",
    )
)


def struct_ports(pipe, eth_type: int, a: int, b: int) -> list[int]:
    frame = bytes(4) + bytes([a, b]) + bytes(6) + eth_type.to_bytes(2, "big")
    return [p for p, _ in pipe.process(0, frame)]


def test_a_value_set_of_a_struct_matches_every_key(tmp_path: Path) -> None:
    program = compiled(tmp_path, STRUCTS)
    (value_set,) = program.p4info.value_sets
    fields = [(m.id, m.name, m.bitwidth, m.match_type) for m in value_set.match]
    M = p4info_pb2.MatchField
    assert fields == [(1, "eth_type", 16, M.TERNARY), (2, "a", 8, M.RANGE), (3, "b", 8, M.EXACT)]
    state = program.new_state()
    pipe = program.pipeline(state)
    member = (rt.FieldMatch(0x8800, 0xFF00), rt.range_match(10, 20), rt.exact(7, 8))
    state.value_set("P.tunnels").set([member])
    assert struct_ports(pipe, 0x88B5, 15, 7) == [5]
    assert struct_ports(pipe, 0x88B5, 21, 7) == [0]  # a out of its range
    assert struct_ports(pipe, 0x88B5, 10, 8) == [0]  # b not exact
    assert struct_ports(pipe, 0x8900, 20, 7) == [0]  # the eth_type's mask


def struct_members(program: CompiledProgram, *members: list) -> p4runtime_pb2.Update:
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
    entry = update.entity.value_set_entry
    entry.value_set_id = program.p4info.value_sets[0].preamble.id
    for matches in members:
        entry.members.add().match.extend(matches)
    return update


def test_a_value_set_of_a_struct_over_p4runtime(tmp_path: Path) -> None:
    program = compiled(tmp_path, STRUCTS)
    state = program.new_state()
    pipe = program.pipeline(state)
    FM = p4runtime_pb2.FieldMatch
    narrow = FM(field_id=2, range=FM.Range(low=b"\x0a", high=b"\x14"))
    member = [narrow, FM(field_id=3, exact=FM.Exact(value=b"\x07"))]  # eth_type: a wildcard
    with serving(program, STRUCTS, state) as client:
        client.write(struct_members(program, member))
        assert struct_ports(pipe, 0x1234, 12, 7) == [5]
        assert struct_ports(pipe, 0x1234, 9, 7) == [0]
        read = p4runtime_pb2.Entity()
        read.value_set_entry.value_set_id = program.p4info.value_sets[0].preamble.id
        (back,) = client.read(read)
        assert list(back.value_set_entry.members[0].match) == member
        with pytest.raises(grpc.RpcError) as caught:
            client.write(struct_members(program, [narrow]))  # b, an exact field, left out
        errors = write_errors(caught.value)
        assert code_names(errors) == ["INVALID_ARGUMENT"] and "b is missing" in errors[0].message


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("@match(range) bit<8> a;", "@match(selector) bit<8> a;", "@match(selector)"),
        ("@match(range) bit<8> a;", "@match(range) bit<4> a;", "holds fields of [16, 4, 8] bits"),
        ("bit<8> b; }", "bool b; }", "value set field b is a bool"),
    ],
)
def test_what_value_sets_of_structs_refuse(tmp_path: Path, old: str, new: str, words: str) -> None:
    with pytest.raises(P4CompileError) as err:
        compiled(tmp_path, STRUCTS.replace(old, new, 1))
    assert words in err.value.what and err.value.line > 0, err.value
