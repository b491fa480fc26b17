"""The translation layer on its own: binary strings, matches, actions, and P4Info binding."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import P4InfoMismatchError, P4RTError
from p4switch.p4rt.codec import decode_match, decode_uint, encode_match, encode_uint
from p4switch.p4rt.schema import P4InfoIndex
from p4switch.program import compile_file
from p4switch.runtime import FieldMatch
from tests.p4rt.fixtures import entities as E
from tests.p4rt.fixtures.fake_program import load_p4info, state_from_p4info


@pytest.fixture(scope="module")
def schema() -> P4InfoIndex:
    p4info = load_p4info()
    return P4InfoIndex.bind(p4info, state_from_p4info(p4info))


@pytest.mark.parametrize(
    ("value", "bitwidth", "number"),
    [(b"\x63", 8, 99), (b"\x00\x63", 8, 99), (b"\x00\x00\x63", 12, 99), (b"\x01\xff", 9, 511)],
)
def test_binary_strings_may_carry_leading_zeros(value: bytes, bitwidth: int, number: int) -> None:
    assert decode_uint(value, bitwidth, "x") == number


@pytest.mark.parametrize(("value", "bitwidth"), [(b"\x01\x63", 8), (b"\x10\x63", 12), (b"", 8)])
def test_binary_strings_that_do_not_fit_are_invalid(value: bytes, bitwidth: int) -> None:
    with pytest.raises(P4RTError) as caught:
        decode_uint(value, bitwidth, "x")
    assert caught.value.code == code_pb2.INVALID_ARGUMENT


def test_encoding_is_canonical() -> None:
    assert [encode_uint(v) for v in (0, 1, 255, 256, 0x0A000100)] == [
        b"\x00",
        b"\x01",
        b"\xff",
        b"\x01\x00",
        b"\x0a\x00\x01\x00",
    ]


def test_match_round_trip_with_wildcards(schema: P4InfoIndex) -> None:
    acl = schema.tables[E.ACL]
    entry = E.acl(bytes([10, 0, 0, 0]), bytes([255, 0, 0, 0]), 5)
    match = decode_match(acl, entry.match)
    assert match == (FieldMatch(0x0A000000, 0xFF000000), FieldMatch(0, 0))  # protocol omitted
    assert encode_match(acl, match) == list(entry.match)
    lpm = schema.tables[E.IPV4_LPM]
    assert decode_match(lpm, []) == (FieldMatch(0, 0),)  # an omitted lpm field matches all


def test_exact_fields_cannot_be_omitted_or_repeated(schema: P4InfoIndex) -> None:
    l2 = schema.tables[E.L2]
    with pytest.raises(P4RTError, match="missing"):
        decode_match(l2, [])
    twice = E.l2(b"\x01").match[0]
    with pytest.raises(P4RTError, match="twice"):
        decode_match(l2, [twice, twice])
    as_lpm = p4runtime_pb2.FieldMatch(field_id=1)
    as_lpm.lpm.value, as_lpm.lpm.prefix_len = b"\x01", 48
    with pytest.raises(P4RTError, match="exact field"):
        decode_match(l2, [as_lpm])


def test_binding_finds_every_object(schema: P4InfoIndex) -> None:
    assert {t.name for t in schema.tables.values()} == {
        "MyIngress.ipv4_lpm",
        "MyIngress.acl",
        "MyIngress.l2",
    }
    assert schema.tables[E.L2].direct_counter_id == E.L2_COUNTER
    assert schema.registers[E.REG].bitwidth == 32 and schema.registers[E.REG].size == 16
    assert schema.counters[E.RX].unit == "packets_and_bytes"
    assert schema.packet_in is not None and schema.packet_in.byte_len == 2
    assert schema.unsupported == frozenset()


def test_binding_lists_every_disagreement() -> None:
    p4info = load_p4info()
    state = state_from_p4info(p4info)
    other = p4info_pb2.P4Info()
    other.CopyFrom(p4info)
    other.tables[0].match_fields[0].bitwidth = 31
    other.actions[2].params[0].name = "egress"
    other.registers[0].size = 17
    other.controller_packet_metadata[0].metadata[1].bitwidth = 6
    with pytest.raises(P4InfoMismatchError) as caught:
        P4InfoIndex.bind(other, state)
    message = str(caught.value)
    for words in ("hdr.ipv4.dstAddr", "egress", "MyIngress.reg", "packet_in"):
        assert words in message


def test_binding_refuses_duplicate_ids() -> None:
    p4info = load_p4info()
    p4info.registers[0].preamble.id = p4info.counters[0].preamble.id
    with pytest.raises(P4InfoMismatchError, match="share id"):
        P4InfoIndex.bind(p4info, state_from_p4info(load_p4info()))


def test_an_int_register_binds_as_p4c_describes_it() -> None:
    """agg32.p4's int<32> lanes: p4c's P4Info (and p4switch's) types them int, not bit; both bind,
    and a cell reads back as its two's complement bits."""
    program = compile_file(Path(__file__).parents[1] / "programs" / "agg32.p4")
    lane = next(r for r in program.p4info.registers if r.preamble.name == "AggIngress.lane00")
    assert lane.type_spec.bitstring.WhichOneof("type_spec") == "int"
    state = program.new_state()
    schema = P4InfoIndex.bind(program.p4info, state)
    assert schema.registers[lane.preamble.id].bitwidth == 32
    state.register("AggIngress.lane00").write(3, -5 & 0xFFFFFFFF)
    assert decode_uint(encode_uint(state.register("AggIngress.lane00").cells[3]), 32, "x") == (
        2**32 - 5
    )
