"""Table keys of type error and of enums without an underlying type: matched exact or optional,
named in P4Info with bitwidth 0 as p4c names them, and written and read over P4Runtime by the
values' names (P4Runtime 1.3, 8.5.5), on both back ends."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch import runtime as rt
from p4switch.exceptions import InvalidArgument, P4CompileError
from p4switch.program import CompiledProgram, compile_file
from tests.p4rt.fixtures.p4rt_client import code_names, serving, write_errors

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
enum Kind { Unicast, Broadcast, Control }
error { NoTag }
header eth_t { bit<48> dst; bit<48> src; bit<16> eth_type; }
header tag_t { bit<32> v; }
struct headers { eth_t eth; tag_t tag; }
struct meta { Kind kind; }
parser P(packet_in p, out headers h, inout meta m, inout standard_metadata_t s) {
    state start {
        p.extract(h.eth);
        transition select(h.eth.eth_type) { 0x9000: tag; default: accept; }
    }
    state tag { p.extract(h.tag); verify(h.tag.v != 0, error.NoTag); transition accept; }
}
control V(inout headers h, inout meta m) { apply { } }
control I(inout headers h, inout meta m, inout standard_metadata_t s) {
    action to(bit<9> port) { s.egress_spec = port; }
    table by_error {
        key = { s.parser_error: exact; }
        actions = { to; NoAction; }
        default_action = to(9);
    }
    table by_kind {
        key = { m.kind: optional; h.eth.src[7:0]: exact; }
        actions = { to; NoAction; }
        default_action = NoAction();
        const entries = {
            (Kind.Control, 1): to(7);
            (_, 1): to(6);
        }
    }
    apply {
        if (h.eth.dst == 0xffffffffffff) { m.kind = Kind.Broadcast; }
        else if (h.eth.eth_type == 0x88cc) { m.kind = Kind.Control; }
        else { m.kind = Kind.Unicast; }
        by_error.apply();
        by_kind.apply();
    }
}
control E(inout headers h, inout meta m, inout standard_metadata_t s) { apply { } }
control C(inout headers h, inout meta m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.eth); p.emit(h.tag); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""
ERRORS = [
    "NoError",
    "PacketTooShort",
    "NoMatch",
    "StackOutOfBounds",
    "HeaderTooShort",
    "ParserTimeout",
    "ParserInvalidArgument",
    "NoTag",
]


def compiled(tmp_path: Path, text: str = PROGRAM) -> CompiledProgram:
    path = tmp_path / "symbolic.p4"
    path.write_text(text)
    return compile_file(path)


def frame(src_low: int = 0, dst: int = 5, eth_type: int = 0x0800, tail: bytes = b"") -> bytes:
    src = bytes(5) + bytes([src_low])
    return dst.to_bytes(6, "big") + src + eth_type.to_bytes(2, "big") + tail


TOO_SHORT = frame(eth_type=0x9000, tail=b"\x01\x02")  # a 2-byte tag: PacketTooShort
NO_TAG = frame(eth_type=0x9000, tail=bytes(4))  # a tag of 0: NoTag


def port(pipe, data: bytes) -> int:
    ((out_port, _),) = pipe.process(1, data)
    return out_port


def test_p4info_names_symbolic_keys_with_width_zero(tmp_path: Path) -> None:
    info = compiled(tmp_path).p4info
    fields = {(t.preamble.name, f.name): f for t in info.tables for f in t.match_fields}
    err = fields[("I.by_error", "s.parser_error")]
    assert (err.bitwidth, err.match_type) == (0, p4info_pb2.MatchField.EXACT)
    kind = fields[("I.by_kind", "m.kind")]
    assert (kind.bitwidth, kind.match_type) == (0, p4info_pb2.MatchField.OPTIONAL)
    assert fields[("I.by_kind", "h.eth.src[7:0]")].bitwidth == 8


def test_error_and_enum_keys_match_in_process(tmp_path: Path, backend: str) -> None:
    program = compiled(tmp_path)
    assert list(program.program.errors) == ERRORS
    state = program.new_state()
    pipe = program.pipeline(state)
    table = state.table("I.by_error")
    for name, out in [("PacketTooShort", 2), ("NoTag", 3), ("NoError", 4)]:
        table.insert(
            rt.TableEntry((rt.exact(ERRORS.index(name), 32),), rt.ActionCall("I.to", (out,)))
        )
    assert port(pipe, TOO_SHORT) == 2
    assert port(pipe, NO_TAG) == 3
    assert port(pipe, frame()) == 4
    table.delete((rt.exact(ERRORS.index("NoError"), 32),), 0)
    assert port(pipe, frame()) == 9  # the default
    # const entries: Kind.Control with src ...01 goes to 7, any other kind to 6
    assert port(pipe, frame(src_low=1, eth_type=0x88CC)) == 7
    assert port(pipe, frame(src_low=1, dst=0xFFFFFFFFFFFF)) == 6
    with pytest.raises(InvalidArgument, match="has no value 8"):
        table.insert(rt.TableEntry((rt.exact(8, 32),), rt.ActionCall("NoAction", ())))


def ids(program: CompiledProgram) -> dict[str, int]:
    info = program.p4info
    return {o.preamble.name: o.preamble.id for o in (*info.tables, *info.actions)}


def error_entry(program: CompiledProgram, name: bytes, out: int) -> p4runtime_pb2.Update:
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    te = update.entity.table_entry
    te.table_id = ids(program)["I.by_error"]
    te.match.add(field_id=1).exact.value = name
    te.action.action.action_id = ids(program)["I.to"]
    te.action.action.params.add(param_id=1, value=bytes([out]))
    return update


def test_error_keys_are_written_and_read_by_name_over_p4runtime(tmp_path: Path) -> None:
    program = compiled(tmp_path)
    state = program.new_state()
    pipe = program.pipeline(state)
    with serving(program, PROGRAM, state) as client:
        client.write(error_entry(program, b"PacketTooShort", 2), error_entry(program, b"NoTag", 3))
        assert port(pipe, TOO_SHORT) == 2
        assert port(pipe, NO_TAG) == 3
        read = p4runtime_pb2.Entity()
        read.table_entry.table_id = ids(program)["I.by_error"]
        names = {e.table_entry.match[0].exact.value for e in client.read(read)}
        assert names == {b"PacketTooShort", b"NoTag"}
        read.table_entry.table_id = ids(program)["I.by_kind"]
        entries = [e.table_entry.match for e in client.read(read)]
        kinds = [[m.optional.value for m in match if m.field_id == 1] for match in entries]
        assert sorted(kinds) == [[], [b"Control"]]  # `_` is a wildcard: left out
        with pytest.raises(grpc.RpcError) as caught:
            client.write(error_entry(program, b"NoSuchError", 4))
        errors = write_errors(caught.value)
        assert code_names(errors) == ["INVALID_ARGUMENT"]
        assert "'NoSuchError' is not one of its values" in errors[0].message


def test_a_symbolic_key_matches_exact_or_optional_only(tmp_path: Path) -> None:
    text = PROGRAM.replace("s.parser_error: exact;", "s.parser_error: ternary;")
    with pytest.raises(P4CompileError, match="has no numeric value: match it exact or optional"):
        compiled(tmp_path, text)
