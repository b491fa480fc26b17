"""Frames built from named headers: lengths, types and checksums filled in, tags laid out."""

from __future__ import annotations

import struct

import pytest

from innet.checksum import internet_checksum
from innet.packetformat import PacketFormat
from p4diff.exceptions import FrameError
from p4diff.frames import build, from_hex
from workers.packets import Flag, InnetPacket, PacketType

ETH = {"ethernet": {"dst": "02:00:0a:00:00:fe", "src": "02:00:0a:00:00:01"}}
IP = {"ipv4": {"src": "10.0.0.1", "dst": "10.0.1.1"}}
UDP = {"udp": {"sport": 1234, "dport": 5678}}
PACKET_FORMAT = PacketFormat()


def test_ipv4_udp_lengths_types_and_a_checksum_that_verifies() -> None:
    frame = build([ETH, IP, UDP, {"hex": "c0 ff ee"}], PACKET_FORMAT)
    assert frame[12:14] == b"\x08\x00"
    version_ihl, total, ttl, proto = frame[14], frame[16:18], frame[22], frame[23]
    assert (version_ihl, int.from_bytes(total, "big"), ttl, proto) == (0x45, 31, 64, 17)
    assert internet_checksum(frame[14:34]) == 0  # the header with its checksum sums to zero
    assert struct.unpack("!HHHH", frame[34:42]) == (1234, 5678, 11, 0)
    assert frame[42:] == b"\xc0\xff\xee"


def test_a_given_checksum_and_options_are_kept() -> None:
    frame = build(
        [ETH, {"ipv4": {**IP["ipv4"], "checksum": 0x1234, "options": "01010100"}}, UDP],
        PACKET_FORMAT,
    )
    assert frame[14] == 0x46 and frame[24:26] == b"\x12\x34" and frame[34:38] == b"\x01\x01\x01\x00"
    with pytest.raises(FrameError, match="4-byte words"):
        build([ETH, {"ipv4": {**IP["ipv4"], "options": "01"}}, UDP], PACKET_FORMAT)


def test_vlan_tags_802_1q_and_802_1ad() -> None:
    tagged = build([ETH, {"vlan": {"vid": 5, "pcp": 3}}, IP, UDP], PACKET_FORMAT)
    assert tagged[12:18] == bytes.fromhex("8100 6005 0800")
    qinq = build(
        [ETH, {"vlan": {"tpid": 0x88A8, "vid": 100}}, {"vlan": {"vid": 5}}, IP, UDP], PACKET_FORMAT
    )
    assert qinq[12:22] == bytes.fromhex("88a8 0064 8100 0005 0800")
    assert qinq[22:] == build([ETH, IP, UDP], PACKET_FORMAT)[14:]


def test_the_innet_layer_is_the_workers_encoding() -> None:
    layer = {
        "innet": {
            "type": "recover",
            "flags": ["WAN", "retransmit"],
            "job": 1,
            "round": 7,
            "group": 2,
            "src": 3,
            "chunk": 9,
            "values": [1, -1],
        }
    }
    frame = build([ETH, {"ipv4": IP["ipv4"]}, {"udp": {"sport": 40000}}, layer], PACKET_FORMAT)
    expected = InnetPacket.of(
        PacketType.RECOVER,
        Flag.WAN | Flag.RETRANSMIT,
        1,
        7,
        2,
        3,
        9,
        0,
        (1, -1, *[0] * 30),
        PACKET_FORMAT,
    )
    assert frame[36:38] == (20041).to_bytes(2, "big") and frame[42:] == expected.encode()
    bad = build(
        [
            ETH,
            IP,
            {"udp": {"sport": 1}},
            {"innet": {**layer["innet"], "version": 2, "type": 5, "src": 40}},
        ],
        PACKET_FORMAT,
    )
    assert bad[42] == 0x25 and bad[49] == 40  # what the encoder itself refuses to make


def test_an_innet_layer_takes_the_packet_format_it_is_built_in() -> None:
    layer = {"innet": {"job": 1, "round": 7, "group": 0, "src": 3, "chunk": 9, "values": [5]}}
    wide = PacketFormat(256)
    frame = build([ETH, IP, {"udp": {"sport": 40000}}, layer], wide)
    assert len(frame) == wide.frame_bytes == 1082
    assert InnetPacket.decode(frame[42:], wide).values == (5, *[0] * 255)
    too_many = {"innet": {**layer["innet"], "values": [1] * 33}}
    assert len(build([ETH, IP, UDP, too_many], PacketFormat(64))) == 42 + 16 + 256
    with pytest.raises(FrameError, match="at most 32 int32 values"):
        build([ETH, IP, UDP, too_many], PACKET_FORMAT)


def test_arp_and_ipv6() -> None:
    arp = build(
        [
            {"ethernet": {"dst": "ff:ff:ff:ff:ff:ff", "src": "02:00:0a:00:00:01"}},
            {
                "arp": {
                    "op": "reply",
                    "sha": "02:00:0a:00:00:01",
                    "spa": "10.0.0.1",
                    "tpa": "10.0.0.2",
                }
            },
        ],
        PACKET_FORMAT,
    )
    assert arp[12:14] == b"\x08\x06" and len(arp) == 42 and arp[20:22] == b"\x00\x02"
    v6 = build(
        [ETH, {"ipv6": {"src": "fe80::1", "dst": "ff02::1"}}, UDP, {"zeros": 4}], PACKET_FORMAT
    )
    assert v6[12:14] == b"\x86\xdd" and v6[18:20] == (12).to_bytes(2, "big") and v6[20] == 17


@pytest.mark.parametrize(
    ("layers", "message"),
    [
        (
            [{"ethernet": {"dst": "02:00:00:00:00:01", "type": 1}}],
            "layer ethernet: needs a value for 'src'",
        ),
        (
            [ETH, {"ipv4": {"src": "10.0.0.1", "dst": "10.0.0.2", "ttl": 256}}, UDP],
            "ttl: 256 does not fit in 8 bits",
        ),
        (
            [
                ETH,
                IP,
                UDP,
                {
                    "innet": {
                        "job": 1,
                        "round": 1,
                        "group": 0,
                        "src": 0,
                        "chunk": 0,
                        "flags": ["WAN", "FAST"],
                    }
                },
            ],
            "flags: 'FAST' is not one of",
        ),
        (
            [
                ETH,
                IP,
                UDP,
                {
                    "innet": {
                        "job": 1,
                        "round": 1,
                        "group": 0,
                        "src": 0,
                        "chunk": 0,
                        "values": [2**31],
                    }
                },
            ],
            "is not an int32",
        ),
        ([ETH, {"ipv4": 3}], "layer ipv4: its fields are a mapping"),
        ([{"ethernet": {}, "ipv4": {}}], "a layer is a one-key mapping"),
    ],
)
def test_what_cannot_be_built_says_why(layers: list[dict[str, object]], message: str) -> None:
    with pytest.raises(FrameError, match=message):
        build(layers, PACKET_FORMAT)


def test_hex_allows_whitespace_and_refuses_the_rest() -> None:
    assert from_hex("00 11\n22\t33") == bytes.fromhex("00112233")
    with pytest.raises(FrameError, match="the character 'x'"):
        from_hex("0x11")
