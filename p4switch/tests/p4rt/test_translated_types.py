"""Named types over P4Runtime: a P4Info naming new types and serializable enums as p4c writes it
binds to the program; values of a type with `@p4runtime_translation` (the controller's, which
p4switch does not translate) are refused with UNIMPLEMENTED rather than read as the program's."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import P4RTError, PacketInError
from p4switch.p4rt.codec import decode_action, decode_match
from p4switch.p4rt.packetio import packet_in_message
from p4switch.p4rt.schema import P4InfoIndex
from p4switch.program import CompiledProgram, compile_file

PROGRAM = Path(__file__).parents[1] / "programs" / "named_types.p4"


@pytest.fixture(scope="module")
def program() -> CompiledProgram:
    return compile_file(PROGRAM)


@pytest.fixture(scope="module")
def schema(program: CompiledProgram) -> P4InfoIndex:
    return P4InfoIndex.bind(program.p4info, program.new_state())


def by_name(items, name):
    return next(i for i in items if i.preamble.name == name)


def test_fields_of_new_types_take_the_program_s_values(
    program: CompiledProgram, schema: P4InfoIndex
) -> None:
    table = schema.tables[by_name(program.p4info.tables, "ingress.ports").preamble.id]
    port = p4runtime_pb2.FieldMatch(field_id=1)
    port.exact.value = b"\x01\x05"
    (key, wildcard) = decode_match(table, [port])
    assert (key.value, key.mask, wildcard.mask) == (0x105, 0x1FF, 0)
    forward = p4runtime_pb2.Action(
        action_id=by_name(program.p4info.actions, "ingress.forward").preamble.id
    )
    forward.params.add(param_id=1, value=b"\x01\x05")
    assert decode_action(schema, table, forward).args == (0x105,)
    register = schema.registers[
        by_name(program.p4info.registers, "ingress.last_ether_type").preamble.id
    ]
    assert (register.bitwidth, register.translated) == (16, "")  # a serializable enum's bit<16>
    (digest,) = schema.digests.values()
    assert digest.translated == ""


def test_a_translated_match_field_is_refused(program: CompiledProgram, schema: P4InfoIndex) -> None:
    table = schema.tables[by_name(program.p4info.tables, "ingress.ports").preamble.id]
    tenant = p4runtime_pb2.FieldMatch(field_id=2)
    tenant.ternary.value, tenant.ternary.mask = b"\x00\x00\x00\x07", b"\x00\x00\x0f\xff"
    with pytest.raises(P4RTError) as caught:
        decode_match(table, [tenant])
    assert caught.value.code == code_pb2.UNIMPLEMENTED
    assert (
        "hdr.vlan.tenant is of type tenant_t (example.org/p4switch/tenant_t)"
        in caught.value.message
    )


def test_a_translated_action_parameter_is_refused(
    program: CompiledProgram, schema: P4InfoIndex
) -> None:
    table = schema.tables[by_name(program.p4info.tables, "ingress.tenants").preamble.id]
    action = p4runtime_pb2.Action(
        action_id=by_name(program.p4info.actions, "ingress.set_tenant").preamble.id
    )
    action.params.add(param_id=1, value=b"\x07")
    with pytest.raises(P4RTError) as caught:
        decode_action(schema, table, action)
    assert caught.value.code == code_pb2.UNIMPLEMENTED
    assert "set_tenant: parameter tenant is of type tenant_t" in caught.value.message


def test_a_packet_in_header_with_a_translated_field_is_not_sent(program: CompiledProgram) -> None:
    info = p4info_pb2.P4Info()
    info.CopyFrom(program.p4info)
    field = info.controller_packet_metadata[0].metadata[0]
    field.type_name.name, field.bitwidth = "tenant_t", 32
    schema = P4InfoIndex.bind(info, program.new_state())
    with pytest.raises(PacketInError, match="ingress_port is of type tenant_t"):
        packet_in_message(schema.packet_in, bytes(64))


def test_a_digest_or_register_of_a_translated_type_is_bound_and_marked(
    program: CompiledProgram,
) -> None:
    info = p4info_pb2.P4Info()
    info.CopyFrom(program.p4info)
    info.type_info.structs["learn_t"].members[1].type_spec.new_type.name = "tenant_t"
    register = by_name(info.registers, "ingress.last_ether_type")
    register.type_spec.new_type.name = "tenant_t"
    schema = P4InfoIndex.bind(info, program.new_state())
    (digest,) = schema.digests.values()
    assert digest.translated == "tenant_t (example.org/p4switch/tenant_t)"
    assert schema.registers[register.preamble.id].translated.startswith("tenant_t")
