"""Entities from names: ids and canonical binary strings from innet.p4's P4Info."""

from __future__ import annotations

import pytest

from controller.p4rt.exceptions import SchemaError
from controller.p4rt.schema import Lpm, Schema, encode
from tests.unit.controller.conftest import Innet


def test_values_are_canonical_big_endian_and_must_fit() -> None:
    assert encode(0, 16) == b"\x00"
    assert encode(0x1FF, 9) == b"\x01\xff"
    assert encode("10.0.1.2", 32) == bytes([10, 0, 1, 2])
    assert encode("02:00:0a:00:01:fe", 48) == bytes.fromhex("02000a0001fe")
    with pytest.raises(SchemaError, match="does not fit in 9 bits"):
        encode(512, 9, "port")
    with pytest.raises(SchemaError, match="not a MAC"):
        encode("02:00", 48)


def test_a_table_entry_by_names(innet: Innet) -> None:
    schema = Schema(innet.p4info)
    entity = schema.table_entry(
        "InnetIngress.membership",
        {"hdr.innet.job": 1, "hdr.innet.round": 300, "hdr.innet.group": 0},
        "InnetIngress.member",
        {"expected": 7, "my_bit": 1, "local_grp": 1, "stale_us": 2_000_000},
    )
    entry = entity.table_entry
    assert entry.table_id == schema.table("InnetIngress.membership").preamble.id
    assert [m.exact.value for m in entry.match] == [b"\x01", b"\x01\x2c", b"\x00"]
    assert entry.action.action.action_id == schema.action("InnetIngress.member").preamble.id
    assert [p.value for p in entry.action.action.params] == [
        b"\x07",
        b"\x01",
        b"\x01",
        (2_000_000).to_bytes(3, "big"),
    ]
    text = schema.describe(entity)
    assert "InnetIngress.membership" in text and "hdr.innet.round=300" in text


def test_lpm_values_are_masked_to_their_prefix(innet: Innet) -> None:
    schema = Schema(innet.p4info)
    entity = schema.table_entry(
        "InnetIngress.ipv4_lpm",
        {"hdr.ipv4.dstAddr": Lpm("10.0.3.77", 24)},
        "InnetIngress.forward",
        {"port": 3, "dmac": "02:00:0a:00:03:fe"},
    )
    (m,) = entity.table_entry.match
    assert (m.lpm.value, m.lpm.prefix_len) == (bytes([10, 0, 3, 0]), 24)


def test_mistakes_name_what_exists(innet: Innet) -> None:
    schema = Schema(innet.p4info)
    with pytest.raises(SchemaError, match=r"no table 'InnetIngress\.nope'; known: .*membership"):
        schema.table_entry("InnetIngress.nope", {})
    with pytest.raises(SchemaError, match=r"exact field hdr\.innet\.group needs a value"):
        schema.table_entry("InnetIngress.membership", {"hdr.innet.job": 1, "hdr.innet.round": 1})
    with pytest.raises(SchemaError, match=r"has no action InnetIngress\.forward"):
        schema.table_entry(
            "InnetEgress.host_port",
            {"standard_metadata.egress_port": 1},
            "InnetIngress.forward",
            {"port": 1, "dmac": 0},
        )
    with pytest.raises(SchemaError, match="missing \\['local_grp', 'stale_us'\\]"):
        schema.action_call("InnetIngress.member", {"expected": 1, "my_bit": 1})
    with pytest.raises(SchemaError, match="expects Lpm"):
        schema.table_entry("InnetIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": 5})
